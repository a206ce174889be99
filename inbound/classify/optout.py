"""The opt-out guard: requests to stop in the words people really write. Pure.

stop_wording.py holds the precise phrases ("please remove me", "dadme de baja"). This guard reads what they
miss, and ingestion suppresses on both (stop_wording.unsubscribe_spans adds these spans to its own):

- typos of the key words ("unsubscibe", "unsubsribe", "austrgen", "desinscription"): a word within one edit
  of a key word (two for long ones), accents ignored;
- wording without a key word, in en, de, fr, es, it, nl, pt and pl: phrases ("please don't email again",
  "stop.", "lassen Sie mich in Ruhe") and concepts read together in one sentence — a verb of stopping with a
  kind of contact after it ("parem de me enviar"), a wish for none with receiving ("nie chcę otrzymywać"), a
  removal with the writer's own address or data ("lose my email address", "apaguem os meus dados");
- data-protection demands are read apart, in data_requests.py, so that a reader sees a legal deadline run.

Not an opt-out, decided here (the caller also drops negated ones, "please don't remove me"):

- a question about taking *other* people off something ("how do I unsubscribe my team from X?", "comment mes
  clients peuvent-ils se désinscrire ?"): it asks nothing of us about the writer;
- the key word used as a noun for a topic ("unsubscribe rates are our problem", "le disiscrizioni dei clienti").

The callers also drop a request negated after its verb or answered no ("tragen Sie mich nicht aus", "Remove me?
No need.": negation.py) and one said of someone or something else ("remove Anna Berg from your list, she left",
"stop sending me time slots", "delete my old address": someone_else.py).

Fail safe, deliberately unlike stop_wording.py's precision first: a request is read wherever the writer's
own address, data or mail is the object of stopping or deleting, because a wrong suppression costs one
follow-up and a missed one mails someone who asked us to stop.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache

from .negation import asks_back_in, negated_after, negated_before

# ---------------------------------------------------------------------------------------------------------
# Folding: lower case without accents, one character for one, so a span found in the folded text is the
# same span in the text as written.

_SPECIAL = {"ł": "l", "ß": "s", "ø": "o", "æ": "a", "œ": "o", "đ": "d", "’": "'", "`": "'", "´": "'"}


@cache
def _fold_char(char: str) -> str:
    lowered = char.lower()
    if len(lowered) != 1:
        return char
    if lowered in _SPECIAL:
        return _SPECIAL[lowered]
    base = unicodedata.normalize("NFKD", lowered)[:1]
    return base if base.isascii() else lowered


def fold(text: str) -> str:
    """The text in lower case without accents, as long as the text itself."""
    return "".join(_fold_char(char) for char in text)


# ---------------------------------------------------------------------------------------------------------
# Key words read through typos

# The verbs of taking oneself off a list, in each language, as written (folded). A word within one edit of
# one of them (two when it has nine letters or more) is that word.
KEY_WORDS = (
    "unsubscribe", "unsubscribed", "unsubscribing", "unsuscribe", "desinscrire", "desinscrivez", "desinscription",
    "desabonner", "desabonnez", "desabonnement", "abmelden", "austragen", "abbestellen", "uitschrijven",
    "afmelden", "disiscrivetemi", "disiscrivermi", "disiscrizione", "descadastrar", "descadastre",
    "desuscribirme", "desuscribir", "desinscribirme", "wypiszcie", "wypisac", "wypisz",
)
_WORD_RE = re.compile(r"[a-z]+")


def _within(word: str, key: str, limit: int) -> bool:
    """Whether ``word`` is at most ``limit`` edits (insert, delete, replace, swap two neighbours) from ``key``."""
    if abs(len(word) - len(key)) > limit:
        return False
    previous2: list[int] = []
    previous = list(range(len(key) + 1))
    for i, a in enumerate(word, 1):
        current = [i] + [0] * len(key)
        for j, b in enumerate(key, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == key[j - 2] and word[i - 2] == b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return False
        previous2, previous = previous, current
    return previous[-1] <= limit


@cache
def is_key_word(word: str) -> bool:
    """Whether a folded word is one of KEY_WORDS, typos allowed ("unsubscibe", "austrgen")."""
    if len(word) < 6:
        return False
    limit = 2 if len(word) >= 9 else 1
    return any(word[0] == key[0] and _within(word, key, limit) for key in KEY_WORDS)


# ---------------------------------------------------------------------------------------------------------
# Wording without a key word (matched on folded text)

_OWN_ADDRESS = (
    r"(my|our) (e-?mail|email address|e-?mail address|address|contact details|details|name|data|personal data"
    r"|information|info)"
)
# Sending to the writer, as a question about more to come names it: "send", "schicken", "mandarmi", "wysłać".
_CONTACT_LATE = (
    r"\b(send\w*|sent|mail\w*|e-?mail\w*|schick\w*|senden|envoy\w*|envi\w*|mand\w*|invi\w*|stur\w*|wysla\w*"
    r"|wysyl\w*|przysl\w*|receber|recevoir|recibir|ricever\w*|bekommen|krijgen|dostac|otrzymac)\b"
)
# The next one threatened with the spam folder: "next one goes straight to spam", "I'll be marking these as junk from
# now on". Not a mail that went there ("your last mail landed in spam") nor a folder to look in ("I'll check spam").
_SPAM_WORDS = (r"(junk|spam\w*|quarantine|quarantaine|quarantena|cuarentena|quarentena|kwarantann\w*|spammap"
               r"|spamfilter|spamordner|indesirables|indeseados|lixo eletronico|posta indesiderata)")
_NEXT_WORDS = (r"(next|nachste\w*|prochaine?|proxim[oa]s?|prossim[oa]|volgende|nastepn\w*|from now on|ab (jetzt|sofort)"
               r"|desormais|dorenavant|a partir de ahora|d'ora in poi|vanaf nu|od teraz|daqui (em|pra) frente"
               r"|any more|another|noch eine|encore un|otro|un altro|un'altra|nog een|jeszcze jeden|mais um)")
_NEXT_TO_SPAM = (
    rf"^(?!.*\b(check\w*|look\w*|search\w*|find|found|such\w*|cherch\w*|busc\w*|cerc\w*|zoek\w*|sprawdz\w*"
    rf"|procur\w*|verifi\w*|kijk\w*|schau\w*|guard\w*|mira\w*|regard\w*)\b)"
    rf"(.*\b{_NEXT_WORDS}\b.{{0,60}}\b{_SPAM_WORDS}\b|.*\b(mark\w*|flag\w*|send\w*|mov\w*|filter\w*)\b.{{0,25}}"
    rf"\b{_SPAM_WORDS}\b.{{0,20}}\b{_NEXT_WORDS}\b)"
)
_STOP = {
    # The same request in every language: "spare yourself the next follow-up", "block our domain", "stop for the
    # whole team", "you can stop now".
    "all": (
        # the writer takes themselves off, in the first person: "ich melde mich hiermit ab", "me doy de baja"
        # ("wir melden uns ab dem 19." is a promise to write back from the 19th: the word ends the clause)
        r"\b((ich|wir) (melde|melden|trage|tragen)|(melde|trage) ich|(melden|tragen) wir) (mich|uns) (hiermit |hier "
        r"|jetzt |hiemit )?(ab|aus)(?=\s*([.!,;]|$))"
        r"|\b(me|nos) (doy|damos) de baja\b"
        r"|\b(ik|wij|we) (meld|melden|schrijf|schrijven) (me|mij|ons) (hierbij |bij deze )?(af|uit)\b"
        r"|\bmi (cancello|disiscrivo)\b|\bci (cancelliamo|disiscriviamo)\b|\bme (descadastro|desinscrevo)\b"
        r"|\bje me (desabonne|desinscris)\b|\bwypisuje (sie|nas)\b",
        r"\b(spare|sparen|ahorr\w*|epargn\w*|risparmi|bespaar\w*|besparen|poup\w*|darowa\w*|daruj\w*)\b.{0,50}"
        r"\b(next|nachste\w*|proxim\w*|prochaine?|prossim\w*|volgende|nastepn\w*) (one|follow-?up|\w*mail|message"
        r"|reminder|nachfass\w*|nachricht|seguimiento|correo|mensaje|relance|sollecito|messaggio|herinnering|bericht"
        r"|mensagem|przypomnienie|wiadomosc)",
        r"\b(nachste\w*|volgende|nastepn\w*) (\w+ )?(nachfass\w*|\w*mail|nachricht|herinnering|bericht|przypomnienie"
        r"|wiadomosc)\b.{0,40}\b(sparen|besparen|darowa\w*)\b",
        r"\b(block|blocken|sperren|blokkeer|blokkeren|zablokuj\w*|zablokowac|bloquez|bloqueen|bloquead|bloquear"
        r"|bloccate|bloccare|bloqueiem)\b.{0,40}\b(domain|domaine|dominio|domein|domene|domen\w*)\b",
        # a sender to be blocked, named as this one: "can you block this company?", "zablokować tę firmę"
        # (not time blocked in a calendar: "block some time for this company's team")
        r"\b(block|blocken|sperren|blokkeer\w*|zablokuj\w*|zablokowac|bloque\w*|blocc\w*)\b(?!.{0,15}\b(time|hours?"
        r"|slots?|minutes|mins?|morning|afternoon|calendar|agenda|tiempo|zeit|termin\w*|temps|creneau|tempo|tijd|czas)\b)"
        r".{0,20}\b(this|that|these|diese[nrs]?|dieses|cette|ce|ces|esta|este|esa|ese|estos|essa|esse|questa|questo"
        r"|quest'|dit|deze|die|tego|te|ta|tej) ?(company|firm|sender|outfit|firma|absender|unternehmen|entreprise"
        r"|societe|expediteur|empresa|remitente|remetente|azienda|ditta|mittente|bedrijf|afzender|firme|nadawc\w*)\b",
        r"\b(stop|paren|parem|arretez|fermatevi|smettete|horen sie|stoppen sie)\b.{0,20}\b(for|pour|para|per|com|con"
        r"|fur|voor) (the |toute l'|todo el |toda a |tutto il |das |het |a )?(whole |entire |ganze |hele |toda )?(team"
        r"|equipe|equipo|equipa|squadra|zespol\w*|company|firm)",
        r"\b(you can|you may|sie konnen|vous pouvez|ya puede|puede|ja pode|pode|puo|potete|u kunt|je kunt|moze pan"
        r"|mozecie|moze pani) (jetzt |maintenant |ya |ja |adesso |nu |juz )?(stop|aufhoren|arreter|parar|smettere"
        r"|stoppen|przestac)( now| here| there| maintenant| ya| adesso| nu)?(?=[.!\s]*$)",
        r"\b(rather|prefer(red)?) (that )?you (didn'?t|did not|stopped|not) (e-?mail|contact|writ|send|messag)\w*",
        r"\blieber,? (sie|du|ihr) (schrieben|schreiben|mailen|mailten|kontaktieren)\w* (mir |mich |uns )?(nicht|nie)"
        r" mehr\b",
        r"\b(wolal\w*|wole),? (zeby|aby) (pan |pani |panstwo |wy )?(juz )?nie (pisal\w*|wysylal\w*|kontaktowal\w*)\b",
        r"\bprefer\w* que no (me|nos) (escrib|envi|mand|contact)\w*",
        r"\bprefer\w* que vous ne (m'|me |nous )?(ecriv|envoy|contact|relanc)\w* plus\b",
        r"\bpreferi\w* che non (mi|ci) (scriv|mand|invi|contatt)\w*", r"\bliever dat (u|je|jullie) (niet meer|geen) ",
        r"\bprefer\w* que (nao )?(me |nos )?nao (me |nos )?(escrev|envi|mand|contact)\w*",
        # consent withdrawn: "I withdraw my consent", "retiro mi consentimiento", "wycofuję zgodę"
        r"\b(withdraw\w*|revok\w*|retir\w*|revoqu\w*|revoc\w*|revog\w*|widerruf\w*|trek\w*|intrek\w*|wycofuj\w*"
        r"|cofam)\b.{0,12}\b(consent|consentement|consentimiento|consenso|consentimento|einwilligung|zustimmung"
        r"|toestemming|zgod\w*)\b",
        # wishing for this to be the last one: "I'd be grateful if this were the last", "ojalá sea el último"
        r"\b(hope|grateful|appreciate\w*|glad|prefer|rather|wish|make sure)\b.{0,30}\b(this|it) (was|were|is|will be"
        r"|be) (the|your) (last|final)\b",
        r"\b(das|dies|diese) (war|ist|bleibt|sei) (hoffentlich |bitte |jetzt )?(die|das) letzte\b",
        r"\b(fosse|sia) (questa |questo )?l'ultim[oa]\b|\bquest[ao] (fosse|sia) l'ultim[ao]\b",
        r"\b(sea|fuera|fuese) (este |esta )?(el|la) ultim[oa]\b|\b(soit|serait) (le|la) dernier\w*\b",
        r"\b(seja|fosse) (este |esta )?(o|a) ultim[oa]\b"
        r"|\b(dit|het) (het |de )?laatste (bericht|mailtje|mail|e-?mail)\w* (is|was|zijn|blijft)\b"
        r"|\b(bylby|bylaby|byl|byla|bedzie) (to )?ostatni\w*\b",
        # counting what is still to come: "how many more of these will you send?", "ile jeszcze takich maili"
        r"\b(how many more|wie viele (\w+ ){0,6}(noch|denn noch)|ile jeszcze|quant[ei] altr[ei]"
        r"|cuant[oa]s (\w+ )?mas|combien (de \w+ |d'\w+ )?encore|quant[oa]s (\w+ )?mais|hoeveel (\w+ ){0,3}nog)\b"
        r".{0,60}" + _CONTACT_LATE,
        # consent challenged: "who allowed you to write to me?", "wer hat Ihnen erlaubt, mich anzuschreiben?"
        r"\bwho (allowed|permitted|gave you (the )?(permission|right))\b"
        r"|\bwer hat (ihnen|euch|dir) (eigentlich |denn )?(erlaubt|die erlaubnis)"
        r"|\bqui vous a (autorise|permis|donne le droit)|\bquien (les|os|te|le) (autorizo|dio (permiso|derecho))"
        r"|\bchi (vi|ti|le) ha (autorizzat|dato il permesso)|\bwie heeft (u|jullie|je) (toestemming|het recht)"
        r"|\bquem (vos|lhes|te|lhe) (autorizou|deu (permissao|o direito))"
        r"|\bkto (wam|panu|pani|panstwu|ci) (pozwolil|dal prawo|zezwolil)",
        # the next one threatened with the spam folder: "next one goes straight to spam", "volgende keer in de spammap"
        _NEXT_TO_SPAM,
        # "let's end it here", "hier houdt het op", "damit ist Schluss"
        r"\b(let'?s|we can|we should) (end|stop|leave) (it|this|things) (here|there)\b|\bhier houdt het op\b"
        r"|\bon s'arrete la\b|\b(lo )?dejamos aqui\b|\bfiniamola qui\b|\bparamos por aqui\b"
        r"|\bna tym (koniec|poprzestanmy)\b|\bdamit ist (jetzt |dann )?schluss\b",
        # a domain named to be blocked: "can you block northgate-example.co.uk on your side?"
        r"\b(block|blocken|sperren|bloque\w*|blocc\w*|blokkeer\w*|zablokuj\w*)\b.{0,20}\b[\w-]+\.(com|co\.uk|uk|de|fr|es|it|nl"
        r"|pt|pl|be|ch|at|eu|net|org|io|br|mx|ar|cl|co)\b",
        # enough of it: "enough with the emails", "dość tego spamu", "basta con queste mail", "chega de spam"
        r"^\W*(enough|genug|assez|basta|chega|genoeg|dosc|wystarczy|ya basta|ca suffit)\b.{0,20}\b(spam\w*|e-?mails?"
        r"|mails?|maili|wiadomosci|mensajes|correos|messaggi|berichten|mensagens|courriels)\b",
    ),
    "en": (
        r"\b(lose|forget|scrap|bin|purge|wipe|drop|erase|delete|remove|take) " + _OWN_ADDRESS,
        r"\b(do not|don'?t|dont|never|pls don'?t|please don'?t) (e-?mail|contact|write|message|mail|spam)( me| us)?"
        r" (again|anymore|any more|further)\b",
        r"\bstop (e-?mailing|mailing|sending|contacting|writing|messaging|spamming|bothering)\b",
        r"\b(leave|let) (me|us) (alone|be)\b",
        r"\b(i|we) (do not|don'?t) want to hear from you\b",
        r"\btake (me|us) off\b", r"\boff (your|this) (mailing |e-?mail )?list\b",
        r"\b(do not|don'?t|dont|never) send (to )?(me |us )?(any )?(more |further )?(e-?mails?|mails?|messages?"
        r"|follow-?ups?|reminders?|newsletters?|marketing|offers?)\b",
        r"\b(be|being|get|getting) (removed|taken off|unsubscribed|deleted|struck off|crossed off|dropped)"
        r"(?= (from|off)\b)",
        r"\b(have|get) (me|us|my (e-?mail|address|details|name)) (removed|deleted|taken off|unsubscribed)\b",
        r"\brefrain from (contacting|e-?mailing|sending|writing|messaging)\b",
        r"\bno (more |further )?(outreach|cold (e-?mails?|outreach)|sales e-?mails?|prospecting)\b",
        r"\bmake (this|it) the (last|final) (one|e-?mail|message)\b",
        r"\b(do not|don'?t|stop) us(e|ing) (my|this) (e-?mail )?address for (marketing|sales|commercial|promotion)",
        r"\b(kill|end|cancel|close) (the|this|your) (e-?mail )?(sequence|campaign|cadence|drip)\b",
        r"\b(do not|don'?t|dont|never|stop) (circl(e|ing) back|follow(ing)? up|chas(e|ing)( me| us)?|reach(ing)? out"
        r"|pester(ing)?( me| us)?)( to me| with me| with us)? (again|anymore|any more)\b",
        r"\b(not|never) being (chased|contacted|e-?mailed|pestered|followed up)\b",
        r"\b(honou?r|respect|process|action) (my|our|this) (opt-?out|unsubscribe|removal)\b",
        r"\b(me|us) off (the|your|ur|this|that|any|all|every) (\w+ )?(list|lists|database|distribution)\b",
        r"\b(block|blacklist) (my|our|this) (e-?mail|email id|mail id|id|address|domain)\b",
    ),
    "de": (
        r"\blassen sie (mich|uns) (bitte )?in ruhe\b",
        r"\b(nimm|nehmt|nehmen sie) (mich|uns) (bitte )?(von|aus) (der|ihrer|eurer|dieser|deiner|ihrem|eurem|dem) \w*"
        r"(liste|verteiler)\b", r"\bwie werde (ich|wir) (sie|euch|dich) (\w+ ){0,2}los\b",
        r"\b(mich|uns) (bitte )?in ruhe lassen\b",
        r"\bkeine (e-?mails|mails|nachrichten|werbung|newsletter|anfragen|akquise|kaltakquise|kontaktaufnahme\w*"
        r"|kontaktversuche|zusendungen|angebote) mehr\b",
        r"\b(schreiben|mailen|kontaktieren) sie (mich|uns|mir) (bitte )?(nie wieder|nie mehr|niemals wieder)\b",
        r"\bbitte (auch )?keine (weiteren |neuen )?(\w*mails?|nachfass\w*|follow-?ups?|nachrichten|werbung|anfragen"
        r"|newsletter)\b", r"\bkeine weiteren (\w*mails?|nachfass\w*|follow-?ups?)\b",
        r"\b(wunsche|wunschen) (keine|keinen) (weiteren )?(kontakt\w*|zusendungen|mails|e-?mails|werbung"
        r"|nachrichten)\b",
        r"\b(adresse|e-?mail-?adresse|daten) nicht (mehr|weiter) (zu )?(verwenden|nutzen|benutzen)\b",
        r"\b(nehmt|nimm|nehmen sie) (mich|uns) (\w+ ){0,2}(raus|heraus)\b",
        r"\bvon (weiteren|kunftigen|jeglichen) (kontakt\w*|zusendung\w*|e-?mails|mails|anfragen|nachrichten"
        r"|anschreiben)\b.{0,40}\b(abzusehen|absehen|abstand)\b",
        r"\b(nehmen|streichen|entfernen|loschen) sie (mich|uns|meine \w+)\b",
        r"\btragen sie (mich|uns)\b.{0,20}\baus\b",
        r"\bvon (ihrer|eurer|dieser) (liste|verteilerliste|mailingliste)\b",
        r"\bvon der (verteilerliste|mailingliste)\b",
        r"\bwiderrufe\b.{0,40}\beinwilligung\b",
        r"\b(stellen sie|stellt|bitte) (den |die |das |alle |jegliche |jeden |jede )?(versand|zusendung\w*"
        r"|aussendung\w*|e-?mails?|mails?|mailings?|newsletter|werbung|kontaktaufnahme\w*|kontaktversuche)\b"
        r".{0,30}\bein\b",
        r"\b(versand|zusendung\w*|aussendung\w*|e-?mails?|mails?|mailings?|werbung|kontaktaufnahme\w*)\b"
        r".{0,20}\beinstellen\b",
        r"\b(entfernt|geloscht|ausgetragen|gestrichen|abgemeldet|herausgenommen|rausgenommen)( zu)? werden\b",
        r"\b(schick|sende|mail|schreib)\w*( sie| s'| s| ihr| du)? (mir|uns) (bitte |doch |einfach )*"
        r"(nix|nichts|keine \w+) mehr\b",
    ),
    "fr": (
        r"\bcess(ez|er) de (m'|me |nous )?(envoyer|ecrire|contacter|solliciter)",
        r"\b(ne )?(veux|voulons|souhaite|souhaitons) plus (de |d')?(mails|e-?mails|messages|courriels|sollicitations)",
        r"\b(retirez|supprimez|effacez|enlevez) (moi|mon adresse|mes coordonnees|mon e-?mail|mes donnees)\b",
        r"\bfoutez-moi la paix\b", r"\blaissez-(moi|nous) tranquilles?\b",
        r"\bne (me |m'|nous )?(contact|ecriv|envoy|sollicit|relanc|mail|spamm)\w* plus\b",
        r"\bde plus (me |m'|nous )(envoyer|ecrire|contacter|solliciter|relancer)\b",
        r"\b(etre|d'etre) (retire|supprime|desinscrit|efface|raye|enleve|desabonne)e?s?\b",
        r"\babsten(ir|ez)(-vous)? de (m'|me |nous )?(contacter|ecrire|envoyer|solliciter|relancer)",
        r"\bplus aucun (envoi|mail|e-?mail|message|courriel|relance)\b",
        r"\bsortez[- ](moi|nous)\b|\b(me|nous|m') sortir (de|du) (votre|vos|la|ce|cette|votre)\b",
        r"\b(m'|me |nous )(oter|enlever|retirer|rayer|supprimer) (de|du)\b",
        r"\bsor(s|tir) de (votre|vos|la|cette) (liste|fichier|base|mailing)",
        r"\bfinis? les (mails|e-?mails|messages|relances)\b",
        r"\bplus rien,? (s'il vous plait|svp|merci)\b",
        r"\barret(e|es|ez|er) de (m'|m |me |nous )?(ecrire|envoyer|contacter|spammer|relancer|solliciter)",
        r"\bne (me |m'|nous )(recontact|relanc)\w* (plus|pas|jamais)\b",
    ),
    "es": (
        r"\b(solicito|pido|quiero|queremos|deseo|solicitamos) (la |darme de |darnos de )?baja\b",
        r"\bno (me|nos) (escriban|escribas|escribais|contacten|envien|mandes|manden) mas\b",
        r"\bdej(en|ad|e) de (escribirme|enviarme|contactarme|mandarme|escribirnos|enviarnos|molestar)",
        r"\b(borren|borrad|eliminen|eliminad|quiten|quitad) (mi|mis|nuestr[oa]s?) ",
        r"\b(eliminenme|eliminadme|borrenme|borradme|saquenme|sacadme|quitenme|quitadme)\b",
        r"\bser (eliminad|borrad|retirad|excluid|quitad)[oa]s?\b|\bser dad[oa]s? de baja\b",
        r"\bque (me|nos) (borr|elimin|quit|saqu|sac)\w*|\bque (me|nos) (den|dieran|deis) de baja\b",
        r"\babst(engan|enga|eneos|enerse) de (enviar|escribir|contactar|mandar)",
        r"\bni un (correo|email|e-mail|mensaje|mail) mas\b",
        r"\b(darse|darnos) de baja\b", r"\bfuera de (la|su|vuestra|esta|sus) lista", r"\bfuera de mi (bandeja|buzon)",
        r"\bya vale de (mandar|enviar|escribir)\w*", r"\bdej(en|ad|e|a)(me|nos)? en paz\b",
        r"\bno (me|nos) (enviaran|enviasen|mandaran|mandasen|escribieran|escribiesen|contactaran|contactasen)\b",
        r"\bno (me|nos) (escrib|contact|envi|mand|molest)\w* (mas|nunca mas)\b",
        r"\bno (recib\w*) (nada|ningun\w*) mas\b",
        r"\brechaz\w* (cualquier|todo|todos los|todas las) (\w+ )?(envio|correo|comunicaci|mensaje)\w*",
    ),
    "it": (
        r"\bnon (voglio|vogliamo|desidero) piu (ricevere|essere contattat[oa])",
        r"\bsmettete(la)? di (scrivermi|contattarmi|inviarmi|mandarmi|scriverci)",
        r"\b(toglietemi|toglimi|rimuovetemi|cancellatemi|eliminatemi)\b",
        r"\b(cancellare|cancellate|rimuovere|rimuovete|eliminare|eliminate) (il mio|i miei|la mia|le mie) ",
        r"\b(non|nn) (scrivetemi|contattatemi|scrivermi|contattarmi|contattarci|scriverci|contattateci|scriveteci)\b",
        r"\bnon (mi |ci )?(mandate|inviate|scrivete|mandare|inviare)(mi|ci)? (piu|altr\w+|ulterior\w+)\b",
        r"\b(niente|nessuna?) (piu |altre? )?(mail|e-?mail|email|messaggi|comunicazioni|newsletter|promemoria"
        r"|solleciti)\b",
        r"\bessere (rimoss|cancellat|tolt|eliminat|disiscritt)[oaie]\b",
        r"\bastene(te|rvi|tevi|rsi)\w* da(l|ll'|llo)? ?(contattar|scriver|inviar|mandar)",
    ),
    "nl": (
        r"\b(geen|niet langer) (e-?mails|mails|berichten|nieuwsbrieven)( meer)?\b.{0,20}\bontvangen\b",
        r"\bgeen (e-?mails|mails|berichten) meer\b",
        r"\bstop (met|nu met) (mailen|e-?mailen|sturen|berichten)\b",
        r"\bhaal (me|mij|ons)( \w+){0,2} (van|uit|eraf)\b", r"\bhaal (me|mij|ons) er( \w+){0,2} af\b",
        r"\bhaal (mijn|onze) \w+ (van|uit)\b",
        r"\b(me|mij|ons|mijn \w+|onze \w+|dit (e-?mail)?adres) (\w+ )?(van|uit) (uw|jullie|de|je|deze|het)"
        r" \w*(lijst|bestand|database|crm)\w*( \w+)? (te )?(halen|gehaald|verwijderen|verwijderd|schrappen"
        r"|geschrapt)\b",
        r"\bneem geen contact (meer )?(met (mij|me|ons) )?op\b",
        r"\bgeen (\w+ ){0,2}?(e-?mails|mails|mailtjes|berichten|follow-?ups|herinneringen|nieuwsbrieven|reclame"
        r"|aanbiedingen) meer\b",
        r"\b(verwijderd|gewist|uitgeschreven|afgemeld|gehaald|geschrapt) (te )?(kunnen )?worden\b",
        r"\bverwijder (mij|me|ons|mijn|onze)\b",
        r"\bniet (meer|verder|langer) (te )?(mailen|e-?mailen|benaderen|contacteren|lastigvallen)\b",
        r"\buit (te )?schrijven\b", r"\bschrijf (me|mij|ons) uit\b", r"\bgeen acquisitie meer\b",
        r"^\W*(van|uit) (de|uw|jullie|je) \w*(lijst|bestand)\w* (te )?(halen|verwijderen|schrappen)\b",
        r"\b(wens|wensen) geen (verdere |verder )?(contact|correspondentie|mails|berichten|e-?mails)\b",
        r"\b(dit|mijn) (e-?mail)?adres niet (meer|langer) (te )?gebruiken\b",
        r"^\W*(hou|houd) (toch |nou |nu |eens |er )?(op|mee op)\b",
        r"\bstuur (me|mij|ons) (alsjeblieft |aub |ook |dan |voortaan )*(niets|niks|geen \w+) meer\b",
    ),
    "pt": (
        r"\b(removam|remova|removem|apaguem|apague|retirem|tirem)( o| a)? (meu|minha|meus|minhas|me)\b",
        r"\b(tirar|retirar|remover|apagar|excluir|descadastrar|tirem|retirem|removam|apaguem|excluam|descadastrem)"
        r"-(me|nos)\b",
        r"\bnao (quero|queremos|desejo) (receber )?mais\b",
        r"\bparem de (me |nos )?(enviar|mandar|escrever|contactar|contatar)",
        r"\bnao (me|nos) (enviem|mandem|escrevam|contactem|contatem) mais\b",
        r"\bser (removid|retirad|excluid|descadastrad|apagad|eliminad)[oa]s?\b",
        r"\babst(enham|enha|er)-se de (me |nos )?(contactar|contatar|enviar|escrever)",
        r"\bnenhum (e-?mail|email|contato|contacto|envio) a mais\b|\bmais nenhum (e-?mail|email|contato|envio)\b",
        r"\bnao (me |nos )?(procur|contact|contat|mand|envi|escrev)\w* mais\b",
        r"\bque (me|nos) (retirem|removam|tirem|excluam|apaguem|descadastrem)\b",
        r"\b(deix\w*)[- ](me|nos) em paz\b",
    ),
    "pl": (
        r"\bnie (chce|chcemy|zycze sobie) (otrzymywac|dostawac|wiecej)",
        r"\b(usun|usuncie|usunac|usuniecie|wypiszcie|wypisz) (mnie|moj|moje|mojego|moich|nas)\b",
        r"\bprzesta(c|ncie|n) (do mnie |do nas )?(pisac|wysylac)",
        r"\bprosze (juz )?(mnie )?(juz )?(nie pisac|wiecej nie pisac|nie wysylac|nie kontaktowac)\b",
        r"\bniekontaktowanie\b", r"\bani jednego (maila|wiadomosci)\b", r"\bprosze (juz )?nie ponawiac\b",
        r"\b(zostawcie|zostaw|zostawic)\b.{0,25}\bw spokoju\b|\bdajcie (mi|nam) spokoj\b",
        r"\bpowstrzyma\w* (sie )?od (kontakt|wysyl|pisan)\w*",
        r"\bzostac (usuniet|wypisan|wykreslon|skreslon)\w*",
        r"\bkoniec z (mailami|wiadomosciami|reklamami|newsletter\w*)\b",
        r"\bnie (przesylajcie|wysylajcie|przysylajcie|piszcie|przesylac|wysylac|przysylac)\b.{0,30}\b(wiecej|juz)\b",
        r"\b(wiecej|juz) nie (przesylajcie|wysylajcie|przysylajcie|piszcie)\b",
        r"\brezygnuje z (newslettera|subskrypcji|mailingu|wiadomosci|ofert|korespondencji|kontaktu)\b",
        r"\b(mnie|nas) (usunac|usuncie|wypisac|wypiszcie|wykreslic)\b",
        r"\bnic (wiecej|juz) nie (dostawal\w*|otrzymywal\w*|przychodzil\w*)"
        r"|\bnie (dostawal\w*|otrzymywal\w*) (nic|juz nic)\b",
    ),
}
# Concepts, so wording nobody listed is read too: a request to stop, a wish to receive nothing, a removal of the
# writer's own address or data. Each sentence is read for a verb of one and its object nearby.
_STOP_VERB = (
    r"\b(stop|cease|quit|halt|horen sie auf|aufhoren|cessez|cesser|arretez|arreter|dejen de|dejad de|deje de"
    r"|dejar de|smettete|smettere|smetti|stop met|ophouden|hou op|houd op|parem de|parar de|pare de|paren de"
    r"|deixem de|deixar de|deixe de|przestan\w*|przestac|interromp\w*|unterlassen|beenden|zaprzesta\w*|arrete|arretes"
    r"|para de|cese|cesen|cesar|cesad|cessate|cessare|cessem|cessar"
    r"|non insistete|non insista|no insistan|no insista|no insistas|nao insistam|nao insista)\b"
)
_CONTACT = (
    r"\b(e-?mail\w*|mail\w*|messag\w*|contact\w*|contatt\w*|contat\w*|communications?|correspondence|newsletters?"
    r"|writ\w*|send\w*|follow\w*|chas\w*|circl\w*|pester\w*|bugg\w*|hassl\w*|bother\w*"
    r"|spamm?\w*|receiv\w*|kontakt\w*|nachrichten|zusendungen|schreiben|anzuschreiben|erhalten|courriels?|envoy\w*"
    r"|envoi\w*|ecri\w*|recevoir|sollicit\w*|correos?|comunicaci\w*|mensajes?|escrib\w*|recibir|envi\w*"
    r"|ricever\w*|comunicazioni|messaggi|scriver\w*|inviar\w*|ontvangen|berichten|mailen|sturen|benaderen"
    r"|receber|mensagens|comunicacoes|escrever|otrzymywac|wiadomosci|pisac|wysyl\w*|przesyl\w*|korespondencj\w*"
    r"|follow-?ups?|reminders?)\b"
)
_NO_WISH = (
    r"\b((do not|don'?t|dont|no longer) (want|wish|need|care)"
    r"|(ich|wir) (mochte|mochten|will|wollen) (von (ihnen|euch|dir) )?(keine|nicht mehr|nichts mehr|nix mehr)"
    r"|ne (veux|voulons|souhaite|souhaitons|desire) plus|no (deseo|deseamos|quiero|queremos)"
    r"|non (voglio|vogliamo|desidero|desideriamo)|nao (quero|queremos|desejo|desejamos)"
    r"|(ik|wij|we) (wil|willen) (geen|niets?)"
    r"|nie (chce|chcemy|zycze sobie|zyczymy sobie)"
    r"|(would |'d )?(rather not|prefer not to|prefer no)|lieber (keine|nicht)|prefere ne (plus|pas)"
    r"|(prefiero|preferiria) no|(preferisco|preferirei) non|liever (geen|niet)|(prefiro|preferia) nao"
    r"|(wole|wolalbym|wolalabym|wolelibysmy) nie)\b"
)
_RECEIVE = (
    r"\b(receiv\w*|hear from|be contacted|any (more )?(e-?mails?|mails?|messages?|contact|communications?)"
    r"|erhalten|bekommen|kontaktiert|recevoir|etre contacte\w*|recibir|ser contactad\w*|mas (correos|comunicaciones"
    r"|mensajes|emails)|ricever\w*|essere contattat\w*|ontvangen|benaderd|receber|ser contactad\w*|otrzymywac"
    r"|dostawac|dalszego kontaktu|kontaktu|wiadomosci|hear|get|follow-?ups?|relances|seguimientos|solleciti"
    r"|herinneringen|lembretes|przypomnien\w*|nachfass\w*|horen"
    # hearing of the sender again: "volver a saber de ustedes", "ter notícias da vossa empresa", "sentirvi"
    r"|saber (nada )?(mas )?de (ustedes|usted|vosotros|su|sus|vuestra|vuestro|ti|tu|esta|esa)|entendre parler"
    r"|(ter |receber )?noticias (de voces|de vos|da vossa|do vosso|da sua|da vossa|da empresa|vossas|suas)"
    r"|sentir(vi|la|ti)|slyszec|slyszal\w*)\b"
)
_REMOVE = (
    r"\b(remov\w*|delet\w*|eras\w*|drop|lose|purge|wipe|entfern\w*|losch\w*|streich\w*|retir\w*|suppr\w*"
    r"|effac\w*|enlev\w*|elimin\w*|borr\w*|quiten\w*|quitad\w*|quitar\w*|saquen\w*|rimuov\w*|rimozione"
    r"|cancell\w*|togli\w*|verwijder\w*|schrap\w*|apag\w*|tirem|retirem|usun\w*|wykresl\w*|oubliez|olvidense"
    r"|olvidad|olvidate|dimenticate|dimentichi|dimentica|esquecam|esqueca|esquece|vergeet|zapomnijcie|zapomnij)\b"
)
_OWN_OBJECT = (
    r"\b((my|our) (e-?mail|email address|address|contact|details|data|name|info\w*)|me from"
    r"|(meine?\w*|unsere?\w*) (e-?mail\w*|adresse|kontakt\w*|daten)|(mon|mes|notre|nos) (adresse|e-?mail|coordonnees"
    r"|donnees|contact)|(mi|mis|nuestr\w*) (direccion|correo|email|datos|contacto)|(il mio|i miei|la mia|del mio"
    r"|dei miei|mio) (indirizzo|email|contatto|dati)|(mijn|onze) (e-?mail\w*|adres|gegevens|contactgegevens)"
    r"|(o meu|os meus|a minha|meu|meus) (e-?mail|endereco|contacto|contato|dados)|moj\w* (adres\w*|e-?mail\w*|dan\w*"
    r"|kontakt\w*)|(from|aus|de|dalla|uit|da|z) (your|ihrer|ihrem|vos|votre|su|vuestra|vostra|uw|jullie|vossa|sua"
    r"|waszej|tej) (list\w*|database|datenbank|verteiler\w*|fichiers?|base de datos|lista|bestand|base de dados"
    r"|listy)|[\w.+-]+@[\w-]+(\.[\w-]+)+"
    r"|(our|unsere\w*|notre|nuestr\w*|nostr\w*|onze|ons|nossa|nosso|nasz\w*) (whole|entire|ganze\w*|gesamte\w*"
    r"|komplette\w*|hele|volledige|toute|tutta|cal\w*) (company|firm|domain|organi[sz]ation|business|office|firma"
    r"|unternehmen|haus|societe|entreprise|empresa|azienda|ditta|bedrijf|organisatie|domein|kantoor|domene|grupo"
    r"|group|gruppo|groep)"
    r"|(whole|entire|all of|toda a|toute|l'ensemble de|tutta la|cala|alle) (our|notre|nossa|nostra|nasza|unsere)"
    r" (company|firm|domain|societe|entreprise|empresa|azienda|bedrijf|firme|firma|domene|grupo|group))\b"
)
_CONCEPTS = (
    (re.compile(_STOP_VERB), re.compile(_CONTACT), 40),
    (re.compile(_NO_WISH), re.compile(_RECEIVE), 50),
    (re.compile(_REMOVE), re.compile(_OWN_OBJECT), 40),
)


def _concept_spans(sentence: str) -> list[tuple[int, int]]:
    """A verb of stopping, not wishing or removing, with its object within a few words after it."""
    spans = []
    for verb_re, object_re, reach in _CONCEPTS:
        for verb in verb_re.finditer(sentence):
            if object_re.search(sentence[verb.end() : verb.end() + reach]):
                spans.append((verb.start(), verb.end()))
    return spans


# A sentence that is only the word: "Stop.", "Please stop!", "Basta.", "Halt!".
_BARE_SENTENCE_RE = re.compile(
    r"^\W*(please |pls |bitte |por favor |svp |per favore |prosze |alsjeblieft |aub )?(stop|halt|basta|stopp|arrete"
    r"|arretez|parem|para|stoppen|enough|no more|basta ya|chega|genoeg|wystarczy|dosc|plus jamais|mai piu|nunca mais"
    r"|es reicht|jetzt reichts|ca suffit|(bitte )?(nicht|keine) mehr|przestancie|przestan|parad|paren|smettetela"
    r"|smettete|hort auf|horen sie auf|stoppt|stoppen sie)"
    r"( it| now| please| bitte| por favor| svp| already| ja| jetzt| pls| all of you| everyone| wszyscy| juz| todos"
    r"| tous| tutti| alle| allemaal)?\W*$"
)

# ---------------------------------------------------------------------------------------------------------
# What is not a request: others taken off something, the key word as a topic

_OTHERS = (
    r"\b(team|users?|staff|employees?|customers?|clients?|colleagues?|members?|subscribers?|recipients?|people"
    r"|kunden|nutzer\w*|mitarbeiter\w*|benutzer\w*|utilisateurs?|abonnes|salaries|equipe|usuarios|clientes|clienti"
    r"|empleados|equipo|utenti|dipendenti|squadra|klanten|gebruikers|medewerkers|utilizadores|funcionarios|equipa"
    r"|klientow|klienci|uzytkownik\w*|pracownik\w*|zespol\w*|students?|pupils?|patients?|schuler\w*|studenten"
    r"|patienten|mitglieder\w*|etudiants?|eleves?|patients?|membres|collaborateurs|alumnos|estudiantes|pacientes"
    r"|socios|plantilla|studenti|alunni|pazienti|soci|collaboratori|leerlingen|patienten|leden|werknemers|personeel"
    r"|alunos|estudantes|colaboradores|uczniow\w*|uczniowie|studenc\w*|pacjenc\w*|czlonk\w*|contacts|kontakte"
    r"|contactos|contatti|contatos|contacten|kontakty|(a|an|un|une|ein|eine?n?|um|uma|een) (contact|kontakt|contacto"
    r"|contatto|contato|prospect|lead|recipient))\b"
)
_OTHERS_RE = re.compile(_OTHERS)
_FIRST_PERSON_OBJECT_RE = re.compile(
    r"\b(me|myself|mich|mir|m'|me|mij|mnie)\b|\b(remove|unsubscribe|take) us\b"
    # Italian "mi" (me), not Spanish "mi equipo" (my team); French "moi" (me), not Polish "moi klienci" (my clients)
    rf"|\b(mi|moi)\b(?!\s+{_OTHERS})"
)
_TOPIC_AFTER_RE = re.compile(
    r"^\W{0,2}(rates?|links?|buttons?|process|flow|requests?|handling|management|feature|page|option|url|tools?"
    r"|quote|quotas?|raten?|quote|taux|tasa|tassi|tasso|headers?|funktion|fonction|funcion|funzione|functie|funcao"
    r"|funkcja)\b"
)
# The key word as a noun after an article or a possessive: "le disiscrizioni dei nostri clienti", "your unsubscribes".
_ARTICLE_BEFORE_RE = re.compile(
    r"\b(the|le|la|les|los|las|gli|het|die|der|den|des|os|as|your|our|their|vos|nos|ihre|unsere|vostre|vostri)\s+$"
    r"|\blist-$"  # the List-Unsubscribe header
    # a rate or count of them: "il tasso di disiscrizione", "le taux de désabonnement", "la tasa de bajas"
    r"|\b(rate|number|share|tasso|tassi|taux|tasa|taxa|percentuale|pourcentage|porcentaje|percentagem|numero|nombre"
    r"|anzahl|quote|aantal|percentage|liczba|odsetek|wskaznik)\s+(of|di|de|d'|des|do|da|der|van|an)\s*$"
)
# A sentence ends at . ! ? or a line's end; not at "Art. 17", "e.g." or "3.5".
_SENTENCE_RE = re.compile(r"(?:[^.!?\n]|[.!?](?=[ \t]*\d|\w))+[.!?]*")


def sentences(folded: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group()) for m in _SENTENCE_RE.finditer(folded)]


def about_others(sentence: str) -> bool:
    """A question about taking other people off something, the writer not among them."""
    return sentence.rstrip().endswith("?") and bool(_OTHERS_RE.search(sentence)) and not (
        _FIRST_PERSON_OBJECT_RE.search(sentence)
    )


@cache
def _stop_re() -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for patterns in _STOP.values() for p in patterns))


@cache
def _stop_each() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for patterns in _STOP.values() for p in patterns)


@lru_cache(maxsize=4096)  # a sentence is read by _stop_spans (its line) and stop_set_aside (the text) alike
def _stop_matches(sentence: str) -> tuple[tuple[int, int], ...]:
    """The spans of _stop_re in a folded sentence. Most sentences match none of the patterns; searched one by
    one, each with its own scan, the patterns say so in half the time of the alternation of them all, which
    tries every one at every position. Where one matches, the alternation gives the spans."""
    if not any(pattern.search(sentence) for pattern in _stop_each()):
        return ()
    return tuple(m.span() for m in _stop_re().finditer(sentence))


def is_topic(after: str) -> bool:
    """Whether the words after a key word make it a topic ("unsubscribe rates"), not a request."""
    return bool(_TOPIC_AFTER_RE.search(fold(after)))


def about_others_at(line: str, position: int) -> bool:
    """Whether the sentence of a line around ``position`` is a question about taking others off something."""
    folded = fold(line)
    return any(start <= position < start + len(sentence) and about_others(sentence)
               for start, sentence in sentences(folded))


def stop_spans(line: str) -> list[tuple[int, int]]:
    """Where a line (one of a reply's first lines) asks to stop our mail in words stop_wording.py misses."""
    return list(_stop_spans(line))


@lru_cache(maxsize=1024)  # a reply's lines are read for requests and for words said of another (stop_wording)
def _stop_spans(line: str) -> tuple[tuple[int, int], ...]:
    folded = fold(line)
    spans = []
    for start, sentence in sentences(folded):
        if about_others(sentence):
            continue
        bare = _BARE_SENTENCE_RE.search(sentence)
        if bare:
            spans.append((start + bare.start(2), start + bare.end(2)))
        spans += [(start + a, start + b) for a, b in _stop_matches(sentence)]
        if not asks_about(sentence):
            spans += [(start + a, start + b) for a, b in _concept_spans(sentence)]
        for word in _WORD_RE.finditer(sentence):
            if is_key_word(word.group()) and not is_topic(sentence[word.end() :]) and not (
                _ARTICLE_BEFORE_RE.search(sentence[: word.start()])
            ):
                spans.append((start + word.start(), start + word.end()))
    return tuple(sorted(set(spans)))


# A question that asks us to act is a request ("could you delete my data?"); any other asks about something
# ("do you delete my data after the trial?", "are you GDPR compliant?").
# The question may start with the name of whom it asks: "Kasia, możesz zablokować...?", "@Thomas tu peux voir...?".
_ASKS_TO_ACT_RE = re.compile(
    r"^\W*(\w+( \w+)?, ?|@\w+ )?((please |pls |so )?(can|could|would|will) you\b|(konnen|konnten|wurden) sie\b"
    r"|(kannst|konntest) du\b|(konnt|konntet) ihr\b|pouvez|pourriez|peux-tu|pourrais-tu|(tu|vous) (peux|pourrais"
    r"|pouvez|pourriez)\b|(pueden|podrian|puede|podria|puedes|podrias)\b|(potete|potreste|puoi|potresti)\b"
    r"|(kunt|kunnen|wil|kan|kun|wilt|zou|zouden) (u|je|jullie)\b|(podem|podiam|pode|podes|consegues|consegue"
    r"|conseguem|poderia|poderiam)\b|(czy )?(mozecie|moglibyscie|mozesz|moglbys|moglabys)\b|czy moze\b)"
)


def asks_about(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") and not _ASKS_TO_ACT_RE.search(sentence)


DATA_REQUEST_CHARS = 3000  # a demand letter states it in its first paragraphs


def stop_set_aside(text: str) -> bool:
    """Whether the text has words of stopping that the rules above set aside as no request to stop us: negated
    ("please don't remove me"), undone ("clicked unsubscribe by mistake, please re-add me"), a question about
    others ("how do I unsubscribe my team from X?") or about something ("do you delete data after the trial?"), a
    topic ("unsubscribe rates"). The learned model is then not asked whether the text asks to stop: its reading of
    the same words cannot undo the rule."""
    folded = fold(text[:DATA_REQUEST_CHARS])
    for _, sentence in sentences(folded):
        spans = [*_stop_matches(sentence), *_concept_spans(sentence)]
        spans += [w.span() for w in _WORD_RE.finditer(sentence) if is_key_word(w.group())]
        if not spans:
            continue
        if about_others(sentence) or asks_about(sentence) or asks_back_in(folded):
            return True
        if any(negated_before(sentence[:start]) or negated_after(sentence[start:]) or is_topic(sentence[end:])
               for start, end in spans):
            return True
    return False
