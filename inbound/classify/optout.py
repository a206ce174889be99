"""The opt-out guard: requests to stop and data-protection demands in the words people really write. Pure.

stop_wording.py holds the precise phrases ("please remove me", "dadme de baja"). This guard reads what they
miss, and ingestion suppresses on both (stop_wording.unsubscribe_spans adds these spans to its own):

- typos of the key words ("unsubscibe", "unsubsribe", "austrgen", "desinscription"): a word within one edit
  of a key word (two for long ones), accents ignored;
- wording without a key word, in en, de, fr, es, it, nl, pt and pl: phrases ("please don't email again",
  "stop.", "lassen Sie mich in Ruhe") and concepts read together in one sentence — a verb of stopping with a
  kind of contact after it ("parem de me enviar"), a wish for none with receiving ("nie chcę otrzymywać"), a
  removal with the writer's own address or data ("lose my email address", "apaguem os meus dados");
- data-protection demands (GDPR and its translations DSGVO, RGPD, AVG, RODO, LGPD): erasure (Art. 17), access
  (Art. 15), objection (Art. 21), withdrawn consent, and "where did you get my address". ``data_request``
  names them apart, so a reader sees that a legal deadline runs; they are never a sign of interest.

Not an opt-out, decided here (the caller also drops negated ones, "please don't remove me"):

- a question about taking *other* people off something ("how do I unsubscribe my team from X?", "comment mes
  clients peuvent-ils se désinscrire ?"): it asks nothing of us about the writer;
- the key word used as a noun for a topic ("unsubscribe rates are our problem", "le disiscrizioni dei clienti");
- the law named without a demand about the writer's own data ("are you GDPR compliant?", "does your tool
  handle GDPR deletion requests from our customers?").

The callers also drop a request negated after its verb or answered no ("tragen Sie mich nicht aus", "Remove me?
No need.": negation.py) and one said of someone or something else ("remove Anna Berg from your list, she left",
"stop sending me time slots", "delete my old address": someone_else.py).

Fail safe, deliberately unlike stop_wording.py's precision first: a request is read wherever the writer's
own address, data or mail is the object of stopping or deleting, because a wrong suppression costs one
follow-up and a missed one mails someone who asked us to stop. A source question about one's own address is
read as an access demand even when friendly ("who gave you my address? just curious").
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from .negation import negated_after, negated_before

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
_STOP = {
    # The same request in every language: "spare yourself the next follow-up", "block our domain", "stop for the
    # whole team", "you can stop now".
    "all": (
        r"\b(spare|sparen|ahorr\w*|epargn\w*|risparmi|bespaar\w*|besparen|poup\w*|darowa\w*|daruj\w*)\b.{0,50}"
        r"\b(next|nachste\w*|proxim\w*|prochaine?|prossim\w*|volgende|nastepn\w*) (one|follow-?up|\w*mail|message"
        r"|reminder|nachfass\w*|nachricht|seguimiento|correo|mensaje|relance|sollecito|messaggio|herinnering|bericht"
        r"|mensagem|przypomnienie|wiadomosc)",
        r"\b(nachste\w*|volgende|nastepn\w*) (\w+ )?(nachfass\w*|\w*mail|nachricht|herinnering|bericht|przypomnienie"
        r"|wiadomosc)\b.{0,40}\b(sparen|besparen|darowa\w*)\b",
        r"\b(block|blocken|sperren|blokkeer|blokkeren|zablokuj\w*|zablokowac|bloquez|bloqueen|bloquead|bloquear"
        r"|bloccate|bloccare|bloqueiem)\b.{0,40}\b(domain|domaine|dominio|domein|domene|domen\w*)\b",
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
    ),
    "en": (
        r"\b(lose|forget|scrap|bin|purge|wipe|drop|erase|delete|remove|take) " + _OWN_ADDRESS,
        r"\b(do not|don'?t|dont|never|pls don'?t|please don'?t) (e-?mail|contact|write|message|mail|spam)( me| us)?"
        r" (again|anymore|any more|further)\b",
        r"\bstop (e-?mailing|mailing|sending|contacting|writing|messaging|spamming|bothering)\b",
        r"\b(leave|let) (me|us) (alone|be)\b",
        r"\b(i|we) (do not|don'?t) want to hear from you\b",
        r"\btake (me|us) off\b", r"\boff (your|this) (mailing |e-?mail )?list\b",
        r"\b(do not|don'?t|dont|never) send (me |us )?(any )?(more |further )?(e-?mails?|mails?|messages?|follow-?ups?"
        r"|reminders?|newsletters?|marketing|offers?)\b",
        r"\b(be|being|get|getting) (removed|taken off|unsubscribed|deleted|struck off|crossed off|dropped)"
        r"(?= (from|off)\b)",
        r"\b(have|get) (me|us|my (e-?mail|address|details|name)) (removed|deleted|taken off|unsubscribed)\b",
        r"\brefrain from (contacting|e-?mailing|sending|writing|messaging)\b",
        r"\bno (more |further )?(outreach|cold (e-?mails?|outreach)|sales e-?mails?|prospecting)\b",
        r"\bmake (this|it) the (last|final) (one|e-?mail|message)\b",
        r"\b(do not|don'?t|stop) us(e|ing) (my|this) (e-?mail )?address for (marketing|sales|commercial|promotion)",
    ),
    "de": (
        r"\blassen sie (mich|uns) (bitte )?in ruhe\b", r"\b(mich|uns) (bitte )?in ruhe lassen\b",
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
    ),
}
# Concepts, so wording nobody listed is read too: a request to stop, a wish to receive nothing, a removal of the
# writer's own address or data. Each sentence is read for a verb of one and its object nearby.
_STOP_VERB = (
    r"\b(stop|cease|quit|halt|horen sie auf|aufhoren|cessez|cesser|arretez|arreter|dejen de|dejad de|deje de"
    r"|dejar de|smettete|smettere|smetti|stop met|ophouden|hou op|houd op|parem de|parar de|pare de|paren de"
    r"|deixem de|deixar de|deixe de|przestan\w*|przestac|interromp\w*|unterlassen|beenden|zaprzesta\w*)\b"
)
_CONTACT = (
    r"\b(e-?mail\w*|mail\w*|messag\w*|contact\w*|contatt\w*|contat\w*|communications?|correspondence|newsletters?"
    r"|writ\w*|send\w*|follow\w*|chas\w*|circl\w*|pester\w*|bugg\w*|hassl\w*|bother\w*"
    r"|spamm?\w*|receiv\w*|kontakt\w*|nachrichten|zusendungen|schreiben|anzuschreiben|erhalten|courriels?|envoy\w*"
    r"|envoi\w*|ecri\w*|recevoir|sollicit\w*|correos?|comunicaci\w*|mensajes?|escrib\w*|recibir|envi\w*"
    r"|ricever\w*|comunicazioni|messaggi|scriver\w*|inviar\w*|ontvangen|berichten|mailen|sturen|benaderen"
    r"|receber|mensagens|comunicacoes|escrever|otrzymywac|wiadomosci|pisac|wysylac|follow-?ups?|reminders?)\b"
)
_NO_WISH = (
    r"\b((do not|don'?t|dont|no longer) (want|wish|need|care)"
    r"|(ich|wir) (mochte|mochten|will|wollen) (keine|nicht mehr|nichts mehr|nix mehr)"
    r"|ne (veux|voulons|souhaite|souhaitons|desire) plus|no (deseo|deseamos|quiero|queremos)"
    r"|non (voglio|vogliamo|desidero|desideriamo)|nao (quero|queremos|desejo|desejamos)"
    r"|(ik|wij|we) (wil|willen) (geen|niet)"
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
    r"|herinneringen|lembretes|przypomnien\w*|nachfass\w*|horen)\b"
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
    r"|es reicht|jetzt reichts|ca suffit|(bitte )?(nicht|keine) mehr)"
    r"( it| now| please| bitte| por favor| svp| already| ja| jetzt| pls)?\W*$"
)

# ---------------------------------------------------------------------------------------------------------
# Data-protection demands

_LAW = r"(gdpr|dsgvo|rgpd|avg|rodo|lgpd|ccpa|dpa 2018|data protection act|datenschutz\w*|protection des donnees)"
_ARTICLE = r"\b(art|article|artikel|articolo|articulo|artigo|artykul|art\.)\.? ?(15|17|21)\b"
# The writer in the first person: a demand is theirs ("I request", "ich fordere", "mes données").
_FIRST_PERSON = (
    r"\b(i|my|me|ich|mein\w*|mich|mir|je|j'|mes|mon|moi|yo|mis|mi|io|miei|mio|mia|ik|mijn|mij|eu|meus|meu|minha"
    r"|ja|moj\w*|mnie|zadam|solicito|chiedo|exijo|fordere|demande)\b"
)
_DEMAND = (
    r"\b(eras\w+|delet\w+|remov\w+|forget|forgotten|objec\w+|access|copy|withdraw\w*"
    r"|losch\w+|entfern\w+|auskunft|widersp\w+|widerruf\w*"
    r"|effac\w+|suppr\w+|oppos\w+|acces|retir\w+"
    r"|supres\w+|suprim\w+|borr\w+|elimin\w+|cancelaci\w+|acceso|oposici\w+|opongo|baja"
    r"|cancell\w+|accesso|opposizione|oppongo"
    r"|verwijder\w*|inzage|bezwaar|gegevens (?:te )?wissen|gewist|wis\b"
    r"|apag\w+|acesso|oposi\w+|oponho|exclu\w+"
    r"|usun\w+|dostep\w*|sprzeciw\w*|wglad\w*)"
)
_SOURCE = (
    r"\b(where|how) did you (get|find|obtain|source)\b.{0,30}\b(my|our) (e-?mail|address|details|contact|data|info)"
    r"|\bwho (gave|sold|passed|provided|shared) you (my|our)\b"
    # "how did my address end up on your list", "how on earth did it end up in a sales tool"
    r"|\bhow (on earth |the hell )?did (it|this|my (e-?mail|address|email address|details|data|name)) "
    r"(end up|get|land) (in|on|into)\b"
    r"|\bwhere (do|did) you have (my|our) (e-?mail|address|data)"
    r"|\bwoher (haben|hast|habt) (sie|du|ihr) (meine|unsere)\b"
    r"|\bou avez-vous (trouve|obtenu|eu|recupere)\b.{0,20}\b(mon|mes|notre|nos)\b"
    r"|\bde donde (han|has|habeis) (sacado|obtenido|conseguido)\b.{0,20}\b(mi|mis|nuestr)"
    r"|\bdove (avete|hai) (preso|trovato|ottenuto)\b.{0,20}\b(il mio|la mia|i miei|il nostro)"
    r"|\bwaar (heeft u|heb je|hebben jullie)\b.{0,30}\b(mijn|onze)\b.{0,30}\bvandaan\b"
    r"|\bonde (obtiveram|conseguiram|arranjaram|obteve|encontraram)\b.{0,20}\b(o meu|a minha|os meus|meu)"
    r"|\bskad (macie|masz|ma pan|ma pani|mieliscie)\b.{0,20}\b(moj|moje|mojego)"
    r"|\b(which|what) source\b.{0,30}\b(my|our)\b|\bsource de (mes|mon|nos|notre)\b|\bz jakiego zrodla\b"
    r"|\b(aus welcher|welche) quelle\b.{0,30}\b(meine|unsere)\b|\bde que fuente\b|\bda quale fonte\b|\bde que fonte\b"
    r"|\bhoe (komt|kwam|komen) (u|je|jullie) aan (mijn|dit|ons|onze)\b"
    r"|\b(dane|danych|adres\w*|mail\w*)\b.{0,60}\bskad (je|go|ja) (macie|wzieliscie)\b"
    # "who sold you my address?" in each language: a list broker named, not a friendly "who gave you my address?"
    r"|\bwer hat (ihnen|euch|dir) (meine|unsere)\b.{0,30}\bverkauft|\bqui vous a vendu\b|\bd'ou (tenez|sortez)-vous\b"
    r"|\bquien (les|os|te|le) (vendio|ha vendido)\b|\bchi (vi|ti|le) ha venduto\b"
    r"|\bwie heeft (u|jullie|je) (mijn|ons|onze)\b.{0,30}\bverkocht|\bquem (vos|lhes|te|lhe) vendeu\b"
    r"|\bkto (wam|panu|pani|panstwu|ci) (sprzedal|sprzedala)\b"
)
_DEMAND_RE = re.compile(_DEMAND)
_FIRST_PERSON_RE = re.compile(_FIRST_PERSON)
_LAW_RE = re.compile(rf"\b{_LAW}\b|{_ARTICLE}")
_SOURCE_RE = re.compile(_SOURCE)
# The right's own name: "right to be forgotten", "Recht auf Vergessenwerden", "droit à l'oubli".
_FORGOTTEN_RE = re.compile(
    r"\bright to (be forgotten|erasure)|\brecht auf (vergessen\w*|loschung)|\bdroit (a l'oubli|a l'effacement)"
    r"|\bderecho (al olvido|de supresion)|\bdiritto (all'oblio|alla cancellazione)|\brecht om vergeten"
    r"|\bdireito (ao esquecimento|ao apagamento)|\bprawo do (bycia zapomnian\w*|usuniecia)"
)
# Data held on the writer, said without a possessive: "all data you have on me".
_DATA_ON_ME_RE = re.compile(
    r"\b(data|information|details)\b.{0,30}\byou (hold|have|keep|store)\w* (on|about) (me|us)\b"
)
_OWN_DATA_OBJECT_RE = re.compile(
    r"\b(my|our|meine[rn]?|unsere[rn]?|mes|nos|mis|nuestros|miei|nostri|mijn|onze|meus|nossos|moich|naszych)"
    r" (personal |personlichen |personnelles |personales |personali |persoonlijke |pessoais |osobowych )?"
    r"(data|details|information|daten|kontaktdaten|donnees|coordonnees|datos|dati|gegevens|persoonsgegevens|dados"
    r"|danych)\b"
    r"|\b(donnees|datos|dati|dados|danych) (personnelles|personales|personali|pessoais|osobowych)\b"
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
    r"\b(me|myself|mich|mir|moi|m'|me|mij|mnie)\b|\b(remove|unsubscribe|take) us\b"
    rf"|\bmi\b(?!\s+{_OTHERS})"  # Italian "mi" (me), not Spanish "mi equipo" (my team)
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
)
# A sentence ends at . ! ? or a line's end; not at "Art. 17", "e.g." or "3.5".
_SENTENCE_RE = re.compile(r"(?:[^.!?\n]|[.!?](?=[ \t]*\d|\w))+[.!?]*")


def _sentences(folded: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group()) for m in _SENTENCE_RE.finditer(folded)]


def _about_others(sentence: str) -> bool:
    """A question about taking other people off something, the writer not among them."""
    return sentence.rstrip().endswith("?") and bool(_OTHERS_RE.search(sentence)) and not (
        _FIRST_PERSON_OBJECT_RE.search(sentence)
    )


@cache
def _stop_re() -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for patterns in _STOP.values() for p in patterns))


def is_topic(after: str) -> bool:
    """Whether the words after a key word make it a topic ("unsubscribe rates"), not a request."""
    return bool(_TOPIC_AFTER_RE.search(fold(after)))


def about_others_at(line: str, position: int) -> bool:
    """Whether the sentence of a line around ``position`` is a question about taking others off something."""
    folded = fold(line)
    return any(start <= position < start + len(sentence) and _about_others(sentence)
               for start, sentence in _sentences(folded))


def stop_spans(line: str) -> list[tuple[int, int]]:
    """Where a line (one of a reply's first lines) asks to stop our mail in words stop_wording.py misses."""
    folded = fold(line)
    spans = []
    for start, sentence in _sentences(folded):
        if _about_others(sentence):
            continue
        bare = _BARE_SENTENCE_RE.search(sentence)
        if bare:
            spans.append((start + bare.start(2), start + bare.end(2)))
        spans += [(start + m.start(), start + m.end()) for m in _stop_re().finditer(sentence)]
        if not _asks_about(sentence):
            spans += [(start + a, start + b) for a, b in _concept_spans(sentence)]
        for word in _WORD_RE.finditer(sentence):
            if is_key_word(word.group()) and not is_topic(sentence[word.end() :]) and not (
                _ARTICLE_BEFORE_RE.search(sentence[: word.start()])
            ):
                spans.append((start + word.start(), start + word.end()))
    return sorted(set(spans))


def data_request_spans(text: str) -> list[tuple[int, int]]:
    """Where a text demands something of its writer's data: erasure, access, objection, its source."""
    folded = fold(text)
    spans = []
    for start, sentence in _sentences(folded):
        found = _SOURCE_RE.search(sentence) or _FORGOTTEN_RE.search(sentence)
        demand = _DEMAND_RE.search(sentence)
        cited = bool(demand and _LAW_RE.search(sentence) and _FIRST_PERSON_RE.search(sentence))
        if not found and (_about_others(sentence) or (_asks_about(sentence) and not cited)):
            continue
        if not found and demand and (_OWN_DATA_OBJECT_RE.search(sentence) or _DATA_ON_ME_RE.search(sentence)):
            found = demand
        if not found and cited:
            found = demand
        if found and not negated_before(text[start : start + found.start()]):
            spans.append((start + found.start(), start + found.end()))
    return spans


# A question that asks us to act is a request ("could you delete my data?"); any other asks about something
# ("do you delete my data after the trial?", "are you GDPR compliant?").
_ASKS_TO_ACT_RE = re.compile(
    r"^\W*(please |pls |so )?(can|could|would|will) you\b|^\W*(konnen|konnten|wurden) sie\b|^\W*(pouvez|pourriez)"
    r"|^\W*(pueden|podrian|puede|podria)\b|^\W*(potete|potreste|puoi)\b|^\W*(kunt|kunnen|wil) (u|je|jullie)\b"
    r"|^\W*(podem|podiam|pode)\b|^\W*czy (mozecie|moglibyscie|moze)\b"
)


def _asks_about(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") and not _ASKS_TO_ACT_RE.search(sentence)


def data_request(text: str) -> str:
    """The words of a data-protection demand in a person's new text, or "" when there is none."""
    spans = data_request_spans(text[:DATA_REQUEST_CHARS])
    return text[spans[0][0] : spans[0][1]] if spans else ""


DATA_REQUEST_CHARS = 3000  # a demand letter states it in its first paragraphs


def stop_set_aside(text: str) -> bool:
    """Whether the text has words of stopping that the rules above set aside as no request to stop us: negated
    ("please don't remove me"), a question about others ("how do I unsubscribe my team from X?") or about
    something ("do you delete data after the trial?"), a topic ("unsubscribe rates"). The learned model is then
    not asked whether the text asks to stop: its reading of the same words cannot undo the rule."""
    for _, sentence in _sentences(fold(text[:DATA_REQUEST_CHARS])):
        spans = [m.span() for m in _stop_re().finditer(sentence)] + _concept_spans(sentence)
        spans += [w.span() for w in _WORD_RE.finditer(sentence) if is_key_word(w.group())]
        if not spans:
            continue
        if _about_others(sentence) or _asks_about(sentence):
            return True
        if any(negated_before(sentence[:start]) or negated_after(sentence[start:]) or is_topic(sentence[end:])
               for start, end in spans):
            return True
    return False
