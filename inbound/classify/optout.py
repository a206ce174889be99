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
from .stop_phrases import STOP

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
# Wording without a key word, on folded text: the phrases of stop_phrases.py, and concepts, so wording nobody
# listed is read too: a request to stop, a wish to receive nothing, a removal of the writer's own address or
# data. Each sentence is read for a verb of one and its object nearby.
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
    return re.compile("|".join(f"(?:{p})" for patterns in STOP.values() for p in patterns))


@cache
def _stop_each() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for patterns in STOP.values() for p in patterns)


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
