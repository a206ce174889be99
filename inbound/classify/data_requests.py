"""Data-protection demands in a person's reply: erasure (GDPR Art. 17), access (Art. 15), objection (Art. 21),
withdrawn consent, "right to be forgotten", "delete my data" and "where did you get my address", under the GDPR and
its translations (DSGVO, RGPD, AVG, RODO, LGPD). Pure.

``data_request`` names them apart from other requests to stop (optout.py), so that a reader sees a legal deadline
run; ingestion records them with the rule ``data_request`` (reply.py) and they are never a sign of interest. The
law named without a demand about the writer's own data is none ("are you GDPR compliant?", "does your tool handle
GDPR deletion requests from our customers?"). A source question about one's own address is read as an access
demand even when friendly ("who gave you my address?"); one its writer calls curiosity, with no other demand
("just curious, nice pitch"), is none (``curious_source_question``), but ingestion still holds the address until
an operator decides.
"""

from __future__ import annotations

import re

from .boilerplate import own_words
from .negation import negated_before
from .optout import DATA_REQUEST_CHARS, about_others, asks_about, fold, sentences

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
# The writer's own address, name, number or data: the object of a source question.
_OWN_CONTACT = (
    r"(my|our|meine[nm]?|unsere[nm]?|mon|ma|mes|notre|nos|mi|mis|nuestr[oa]s?|(il |la |i )?(mio|mia|miei|nostro|nostra)"
    r"|mijn|ons|onze|(o |a |os )?(meu|minha|meus|nosso|nossa)|moj\w*|nasz\w*) (e-?mail |email |private |persoonlijke )?"
    r"(e-?mail|mail|address|adresse|adres|e-?mailadres|name|number|details|data|info|contact\w*|daten|kontakt\w*"
    r"|nummer|coordonnees|donnees|nom|numero|direccion|correo|datos|nombre|telefono|indirizzo|dati|nome|naam"
    r"|gegevens|dados|endereco|numer|dane|danych|nazwisko|adresu)"
)
# The address of someone the writer answers for: "o e-mail do nosso diretor", "our CEO's address", "die Adresse
# unseres Geschäftsführers", "il numero del nostro direttore".
_OUR_PERSON = (
    r"(diretor\w*|director\w*|directeur|directrice|direttore|direttrice|dyrektor\w*|ceo|boss|chef\w*|jefe|jefa"
    r"|gerente|presidente|prezes\w*|geschaftsfuhrer\w*|inhaber\w*|owner|manager\w*|dono|dona|proprietari\w*|socio"
    r"|socia|partner\w*|burgermeister\w*|alcalde|sindaco|prefeito|burgemeester|wethouder)"
)
_OUR_PERSON_CONTACT = (
    r"(e-?mail|mail|address|adresse|adres|adresu|e-?mailadres|number|nummer|numero|numer|direccion|correo"
    r"|indirizzo|endereco|contact\w*|kontakt\w*|dane|danych|gegevens|dados|datos|dati|donnees)"
    r"( (do|da|de|del|de la|du|des|of|von|van|della|dello|dei|di))? (nosso|nossa|nuestro|nuestra|our|notre|nos"
    r"|unsere[snmr]?|nostro|nostra|onze|ons|naszego|naszej|naszych) (\w+ )?" + _OUR_PERSON
    + r"|\bour (\w+ )?" + _OUR_PERSON + r"'?s (e-?mail|address|number|details|contact\w*|data)"
)
# The asking words with a verb of having got it: "where'd you get", "which list did you buy", "d'où tenez-vous",
# "¿de dónde sacaron", "come avete avuto", "hoe komen jullie aan", "quem passou", "w jaki sposób trafił".
_ASKED_SOURCE = (
    r"\b(where|how|which list|what list|which database|what database)('d| did| have| had| do) (you|ya|ye|u|they)\b"
    r".{0,20}\b(get|got|gotten|find|found|obtain\w*|buy|bought|source\w*|pick\w* up|come (by|across)|scrape\w*"
    r"|pull\w*|take|took|harvest\w*|have)\b"
    r"|\bwho (gave|sold|passed|provided|shared|handed|forwarded) (you|u|ya)\b|\bwhere (is|was|does|did) (my|our)\b"
    r"|\bwoher (haben|hast|habt|hatten|kennen|kennt) (sie|du|ihr)\b|\bwer hat (ihnen|euch|dir)\b"
    r"|\bwie (sind|seid|bist|kommen|kommt|kamen) (sie|ihr|du) (an|zu|auf)\b"
    r"|\bd'ou (tenez|sortez|avez|vient|viennent|provient)\b|\bou (avez-vous|vous avez|as-tu|est-ce que vous avez)\b"
    r"|\bcomment (avez-vous|vous avez|as-tu)\b|\bqui vous a (donne|transmis|communique|fourni|vendu)\b"
    r"|\bde donde (han|has|habeis|sacaron|sacaste|sacasteis|obtuvieron|tienen|tiene|tenes|salio)\b"
    r"|\bcomo (consiguieron|obtuvieron|consiguio|obtuvo|llegaron|llego|tienen|tiene|conseguiram|obtiveram|tem|teve)\b"
    r"|\bquien (les|le|te|os) (dio|paso|facilito|ha dado|ha pasado)\b"
    r"|\b(da )?dove (avete|hai|ha) (preso|trovato|ottenuto|avuto|recuperato)\b"
    r"|\bcome (avete|hai|ha) (avuto|ottenuto|trovato|preso)\b|\bchi (vi|ti|le) ha (dato|passato|fornito)\b"
    r"|\bhoe (komt|kwam|komen|kwamen|bent|zijn) (u|je|jullie)\b.{0,30}\baan\b"
    r"|\bwaar (heeft|hebt|heb|hebben|haalt|halen) (u|je|jullie)\b|\bwie heeft (u|jullie|je)\b"
    r"|\b(de )?onde (voces|vcs|obtiveram|conseguiram|arranjaram|obteve|encontraram|tiraram|pegaram|veio)\b"
    r"|\bquem (vos|lhes|te|lhe)? ?(passou|deu|forneceu|vendeu)\b"
    r"|\bskad (macie|masz|ma pan|ma pani|mieliscie|wzieliscie|pozyskaliscie)\b|\bw jaki sposob\b"
    r"|\bkto (wam|panu|pani|panstwu|ci) (dal|dala|przekazal|przekazala|udostepnil|udostepnila)\b"
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
    # A question of where the writer's own address came from, in any of its words: the asking word, a verb of
    # getting it in the past, then the address, the name or the data, the writer's own ("which list did you buy
    # my name from?", "woher habt ihr eigentlich meine Adresse?", "quem passou meu e-mail pra vocês?").
    rf"|(?:{_ASKED_SOURCE})\b.{{0,40}}\b(?:{_OWN_CONTACT}|{_OUR_PERSON_CONTACT})\b"
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


def data_request_spans(text: str) -> list[tuple[int, int]]:
    """Where a text demands something of its writer's data: erasure, access, objection, its source. A source
    question the writer calls curiosity, with no other demand, is none (curious_source_question)."""
    spans, curious = _data_request_spans(text)
    return [] if curious else spans


def curious_source_question(text: str) -> str:
    """The words of a source question the writer asks out of curiosity and with no other demand ("who gave you my
    address? just curious, nice pitch"), or "". Not read as a demand: ingestion holds the address provisionally,
    for an operator to decide (reply.check_human)."""
    text = own_words(text)
    spans, curious = _data_request_spans(text[:DATA_REQUEST_CHARS])
    return text[spans[0][0] : spans[0][1]] if curious else ""


# Curiosity said outright: "just curious", "nur aus Neugier", "par curiosité", "pytam z ciekawości".
_CURIOUS_RE = re.compile(
    r"\b(just|only|purely|simply) (curious|wondering|asking)|\bout of (pure |sheer )?curiosity|\b(i'?m|am) curious\b"
    r"|\b(aus|reine\w*) neugier|\binteressehalber\b|\bcuriosite\b|\bcuriosidad\b|\bcuriosita\b"
    r"|^\W*(curieux|curieuse|curioso|curiosa|neugierig|nieuwsgierig|ciekawy|ciekawa)\b"
    r"|\bnieuwsgierig\w*|\bcuriosidade\b|\bciekawo\w*|\bz ciekawosci\b",
    re.M,
)


def _data_request_spans(text: str) -> tuple[list[tuple[int, int]], bool]:
    """The demands' spans, and whether they are only source questions asked out of curiosity."""
    folded = fold(text)
    spans = []
    source_only = True
    for start, sentence in sentences(folded):
        source = _SOURCE_RE.search(sentence)
        found = source or _FORGOTTEN_RE.search(sentence)
        demand = _DEMAND_RE.search(sentence)
        cited = bool(demand and _LAW_RE.search(sentence) and _FIRST_PERSON_RE.search(sentence))
        if not found and (about_others(sentence) or (asks_about(sentence) and not cited)):
            continue
        if not found and demand and (_OWN_DATA_OBJECT_RE.search(sentence) or _DATA_ON_ME_RE.search(sentence)):
            found = demand
        if not found and cited:
            found = demand
        if found and not negated_before(text[start : start + found.start()]):
            spans.append((start + found.start(), start + found.end()))
            source_only = source_only and found is source
    return spans, bool(spans) and source_only and bool(_CURIOUS_RE.search(folded))


def data_request(text: str) -> str:
    """The words of a data-protection demand in a person's new text, or "" when there is none."""
    text = own_words(text)  # not a privacy notice under it, which names the same rights
    spans = data_request_spans(text[:DATA_REQUEST_CHARS])
    return text[spans[0][0] : spans[0][1]] if spans else ""
