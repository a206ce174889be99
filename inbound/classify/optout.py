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
- the key word used as a noun for a topic ("unsubscribe rates are our problem");
- the law named without a demand about the writer's own data ("are you GDPR compliant?", "does your tool
  handle GDPR deletion requests from our customers?").

Fail safe, deliberately unlike stop_wording.py's precision first: a request is read wherever the writer's
own address, data or mail is the object of stopping or deleting, because a wrong suppression costs one
follow-up and a missed one mails someone who asked us to stop. A source question about one's own address is
read as an access demand even when friendly ("who gave you my address? just curious").
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

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
# Negation (the phrases of stop_wording.py and the guard's alike)

# Just before the request, in its clause: a negation, with nothing but "please", "want to" and the like
# between ("please don't remove me", "I don't want to unsubscribe", "bitte nicht abmelden").
_NEGATIONS = "not never dont didnt doesnt wont nicht nie no non não nao niet ne keinesfalls".split() + [
    "no need to", "auf keinen fall", "non c'e bisogno di", "no hace falta", "nao precisa", "hoeft niet", "nie musi"]
_BETWEEN = ("please pls to i we you want wish need would like do be ever bitte sie mich uns möchte will wollen quiero"
            " queremos me nos voglio quero ik wil mnie proszę prosze den").split()
_NEGATED_BEFORE_RE = re.compile(
    rf"(?:\b(?:{'|'.join(_NEGATIONS)})\b|n['’]t)\s*(?:(?:{'|'.join(_BETWEEN)})\s+)*$", re.I
)
# French wraps the verb: "je ne cherche pas à me désinscrire", "je ne veux pas me désabonner" (the writer as its
# object: "je ne veux pas recevoir vos mails" still asks to stop).
_NE_PAS_BEFORE_RE = re.compile(r"\bne\s+\w+\s+pas\s+(?:(?:à|a|de|d['’])\s*)?(?:me\s+|m['’]|nous\s+)$", re.I)
_CLAUSE_END_RE = re.compile(r"[,;:.!?()\u2013\u2014]|\s-\s|\b(but|aber|mais|pero|ma|mas|maar)\b", re.I)
NEGATION_WINDOW = 200


def negated_before(before: str) -> bool:
    """Whether the words just before a request, in its clause, negate it ("please don't", "no quiero")."""
    before = before[-NEGATION_WINDOW:]
    clause_start = max((m.end() for m in _CLAUSE_END_RE.finditer(before)), default=0)
    clause = before[clause_start:]
    return bool(_NEGATED_BEFORE_RE.search(clause) or _NE_PAS_BEFORE_RE.search(clause))


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
    "en": (
        r"\b(lose|forget|scrap|bin|purge|wipe|drop|erase|delete|remove|take) " + _OWN_ADDRESS,
        r"\b(do not|don'?t|dont|never|pls don'?t|please don'?t) (e-?mail|contact|write|message|mail|spam)( me| us)?"
        r" (again|anymore|any more|further)\b",
        r"\bstop (e-?mailing|mailing|sending|contacting|writing|messaging|spamming|bothering)\b",
        r"\b(leave|let) (me|us) (alone|be)\b",
        r"\b(i|we) (do not|don'?t) want to hear from you\b",
        r"\btake (me|us) off\b", r"\boff (your|this) (mailing |e-?mail )?list\b",
    ),
    "de": (
        r"\blassen sie (mich|uns) (bitte )?in ruhe\b", r"\b(mich|uns) (bitte )?in ruhe lassen\b",
        r"\bkeine (e-?mails|mails|nachrichten|werbung|newsletter|anfragen) mehr\b",
        r"\b(nehmen|streichen|entfernen|loschen) sie (mich|uns|meine \w+)\b(?! (bitte )?(nicht|keinesfalls))",
        r"\bvon (ihrer|eurer|dieser) (liste|verteilerliste|mailingliste)\b",
        r"\bvon der (verteilerliste|mailingliste)\b",
        r"\bwiderrufe\b.{0,40}\beinwilligung\b",
    ),
    "fr": (
        r"\bcess(ez|er) de (m'|me |nous )?(envoyer|ecrire|contacter|solliciter)",
        r"\b(ne )?(veux|voulons|souhaite|souhaitons) plus (de |d')?(mails|e-?mails|messages|courriels|sollicitations)",
        r"\b(retirez|supprimez|effacez|enlevez) (moi|mon adresse|mes coordonnees|mon e-?mail|mes donnees)\b",
        r"\bfoutez-moi la paix\b", r"\blaissez-(moi|nous) tranquilles?\b",
    ),
    "es": (
        r"\b(solicito|pido|quiero|queremos|deseo|solicitamos) (la |darme de |darnos de )?baja\b",
        r"\bno (me|nos) (escriban|escribas|escribais|contacten|envien|mandes|manden) mas\b",
        r"\bdej(en|ad|e) de (escribirme|enviarme|contactarme|mandarme|escribirnos|enviarnos|molestar)",
        r"\b(borren|borrad|eliminen|eliminad|quiten|quitad) (mi|mis|nuestr[oa]s?) ",
    ),
    "it": (
        r"\bnon (voglio|vogliamo|desidero) piu (ricevere|essere contattat[oa])",
        r"\bsmettete(la)? di (scrivermi|contattarmi|inviarmi|mandarmi|scriverci)",
        r"\b(toglietemi|toglimi|rimuovetemi|cancellatemi|eliminatemi)\b",
        r"\b(cancellare|cancellate|rimuovere|rimuovete|eliminare|eliminate) (il mio|i miei|la mia|le mie) ",
        r"\bnon (scrivetemi|contattatemi|scrivermi|contattarmi) piu\b",
    ),
    "nl": (
        r"\b(geen|niet langer) (e-?mails|mails|berichten|nieuwsbrieven)( meer)?\b.{0,20}\bontvangen\b",
        r"\bgeen (e-?mails|mails|berichten) meer\b",
        r"\bstop (met|nu met) (mailen|e-?mailen|sturen|berichten)\b",
        r"\bhaal (me|mij|ons) (van|uit)\b",
        r"\bverwijder (mij|me|ons|mijn|onze)\b",
        r"\bniet meer (mailen|benaderen|contacteren)\b", r"\buit (te )?schrijven\b", r"\bschrijf (me|mij|ons) uit\b",
    ),
    "pt": (
        r"\b(removam|remova|removem|apaguem|apague|retirem|tirem)( o| a)? (meu|minha|meus|minhas|me)\b",
        r"\bnao (quero|queremos|desejo) (receber )?mais\b",
        r"\bparem de (me |nos )?(enviar|mandar|escrever|contactar|contatar)",
        r"\bnao (me|nos) (enviem|mandem|escrevam|contactem|contatem) mais\b",
    ),
    "pl": (
        r"\bnie (chce|chcemy|zycze sobie) (otrzymywac|dostawac|wiecej)",
        r"\b(usun|usuncie|usunac|usuniecie|wypiszcie|wypisz) (mnie|moj|moje|mojego|moich|nas)\b",
        r"\bprzesta(c|ncie|n) (do mnie |do nas )?(pisac|wysylac)",
        r"\bprosze (mnie )?(nie pisac|wiecej nie pisac)\b",
    ),
}
# Concepts, so wording nobody listed is read too: a request to stop, a wish to receive nothing, a removal of the
# writer's own address or data. Each sentence is read for a verb of one and its object nearby.
_STOP_VERB = (
    r"\b(stop|cease|quit|halt|horen sie auf|aufhoren|cessez|cesser|arretez|arreter|dejen de|dejad de|deje de"
    r"|dejar de|smettete|smettere|smetti|stop met|ophouden|hou op|houd op|parem de|parar de|pare de|paren de"
    r"|deixem de|deixar de|deixe de|przestan\w*|przestac)\b"
)
_CONTACT = (
    r"\b(e-?mail\w*|mail\w*|messag\w*|contact\w*|communications?|correspondence|newsletters?|writ\w*|send\w*"
    r"|spamm?\w*|receiv\w*|kontakt\w*|nachrichten|zusendungen|schreiben|anzuschreiben|erhalten|courriels?|envoy\w*"
    r"|envoi\w*|ecri\w*|recevoir|sollicit\w*|correos?|comunicaci\w*|mensajes?|escrib\w*|recibir|envi\w*"
    r"|ricever\w*|comunicazioni|messaggi|scriver\w*|inviar\w*|ontvangen|berichten|mailen|sturen|benaderen"
    r"|receber|mensagens|comunicacoes|escrever|otrzymywac|wiadomosci|pisac|wysylac)\b"
)
_NO_WISH = (
    r"\b((do not|don'?t|dont|no longer) (want|wish|need|care)"
    r"|(ich|wir) (mochte|mochten|will|wollen) (keine|nicht mehr)"
    r"|ne (veux|voulons|souhaite|souhaitons|desire) plus|no (deseo|deseamos|quiero|queremos)"
    r"|non (voglio|vogliamo|desidero|desideriamo)|nao (quero|queremos|desejo|desejamos)"
    r"|(ik|wij|we) (wil|willen) (geen|niet)"
    r"|nie (chce|chcemy|zycze sobie|zyczymy sobie))\b"
)
_RECEIVE = (
    r"\b(receiv\w*|hear from|be contacted|any (more )?(e-?mails?|mails?|messages?|contact|communications?)"
    r"|erhalten|bekommen|kontaktiert|recevoir|etre contacte\w*|recibir|ser contactad\w*|mas (correos|comunicaciones"
    r"|mensajes|emails)|ricever\w*|essere contattat\w*|ontvangen|benaderd|receber|ser contactad\w*|otrzymywac"
    r"|dostawac|dalszego kontaktu|kontaktu|wiadomosci)\b"
)
_REMOVE = (
    r"\b(remov\w*|delet\w*|eras\w*|drop|lose|purge|wipe|entfern\w*|losch\w*|streich\w*|retir\w*|suppr\w*"
    r"|effac\w*|enlev\w*|elimin\w*|borr\w*|quiten\w*|quitad\w*|quitar\w*|saquen\w*|rimuov\w*|rimozione"
    r"|cancell\w*|togli\w*|verwijder\w*|schrap\w*|apag\w*|tirem|retirem|usun\w*|wykresl\w*)\b"
)
_OWN_OBJECT = (
    r"\b((my|our) (e-?mail|email address|address|contact|details|data|name|info\w*)|me from"
    r"|(meine?\w*|unsere?\w*) (e-?mail\w*|adresse|kontakt\w*|daten)|(mon|mes|notre|nos) (adresse|e-?mail|coordonnees"
    r"|donnees|contact)|(mi|mis|nuestr\w*) (direccion|correo|email|datos|contacto)|(il mio|i miei|la mia|del mio"
    r"|dei miei|mio) (indirizzo|email|contatto|dati)|(mijn|onze) (e-?mail\w*|adres|gegevens|contactgegevens)"
    r"|(o meu|os meus|a minha|meu|meus) (e-?mail|endereco|contacto|contato|dados)|moj\w* (adres\w*|e-?mail\w*|dan\w*"
    r"|kontakt\w*)|(from|aus|de|dalla|uit|da|z) (your|ihrer|ihrem|vos|votre|su|vuestra|vostra|uw|jullie|vossa|sua"
    r"|waszej|tej) (list\w*|database|datenbank|verteiler\w*|fichiers?|base de datos|lista|bestand|base de dados"
    r"|listy))\b"
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
    r"^\W*(please |pls |bitte |por favor |svp )?(stop|halt|basta|stopp|arrete|arretez|parem|para|stoppen)"
    r"( it| now| please| bitte| por favor| svp)?\W*$"
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
    r"|verwijder\w*|inzage|bezwaar|wissen"
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
    r"|kunden|nutzer\w*|mitarbeiter\w*|benutzer\w*|utilisateurs?|abonnes|salaries|equipe|usuarios|clientes"
    r"|empleados|equipo|utenti|dipendenti|squadra|klanten|gebruikers|medewerkers|utilizadores|funcionarios|equipa"
    r"|klientow|klienci|uzytkownik\w*|pracownik\w*|zespol\w*)\b"
)
_OTHERS_RE = re.compile(_OTHERS)
_FIRST_PERSON_OBJECT_RE = re.compile(
    r"\b(me|myself|mich|mir|moi|m'|me|mij|mnie)\b|\b(remove|unsubscribe|take) us\b"
    rf"|\bmi\b(?!\s+{_OTHERS})"  # Italian "mi" (me), not Spanish "mi equipo" (my team)
)
_TOPIC_AFTER_RE = re.compile(
    r"^\W{0,2}(rates?|links?|buttons?|process|flow|requests?|handling|management|feature|page|option|url|tools?"
    r"|quote|quotas?|raten?|quote|taux|tasa|tassi|tasso)\b"
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
            if is_key_word(word.group()) and not is_topic(sentence[word.end() :]):
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
        if any(negated_before(sentence[:start]) or is_topic(sentence[end:]) for start, end in spans):
            return True
    return False
