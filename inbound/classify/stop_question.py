"""A yes to the question whether to stop writing: the last mail of a sequence often asks it ("Last try: shall I stop
reaching out?", "Should I close your file?"), and the answer is often one word ("Yes.", "Ja.", "Oui svp", "Sim.").

The answer alone says nothing; with the question it quotes, it asks to stop. So a reply whose new words are only an
assent (or "close it") to a question of stopping in the mail it quotes is read as an opt-out. A "no" ("No, keep me
posted") is no assent; nor is an assent to any other question ("shall we talk on Tuesday?" — "Yes.").
"""

from __future__ import annotations

import re

from .optout import fold

# The words of an assent, and of the politeness around it, in the eight languages (folded).
_ASSENT = frozenset(
    "yes yep yeah yup ya sure ok okay please do indeed absolutely definitely correct go ahead"
    " ja jawohl jep gerne genau bitte klar"
    " oui ouais volontiers svp stp merci"
    " si claro dale vale por favor gracias"
    " certo grazie per favore"
    " graag zeker hoor alsjeblieft aub bedankt dank je"
    " sim pode podes obrigado obrigada favor"
    " tak jasne prosze dziekuje"
    " thanks thank you cheers".split()
)
_FIRST = frozenset("yes yep yeah yup sure ok okay please ja jawohl jep gerne genau oui ouais si claro dale vale certo"
                   " graag zeker sim pode podes tak jasne absolutely definitely correct indeed".split())
# "Close it", "clore le dossier", "ciérralo", "sluit het maar": the file closed as the question offered.
_CLOSE_RE = re.compile(
    r"^\W*((yes|ja|oui|si|sim|tak)\W+)?(please |bitte |merci de |por favor |per favore |graag |prosze )?"
    r"(close|clore|cloturer|fermer|fermez|cierra|cierrala|cierralo|cerrad|chiudi|chiudete|chiudetela|sluit|fecha"
    r"|fechem|feche|encerra|zamknij|zamknijcie|schliessen sie|schliess)\b(?!\s+to\b)"  # not "close to signing"
)
# The question of stopping, as the mail quoted under the answer asks it.
_STOP_QUESTION_RE = re.compile(
    r"\b(shall|should|do you want me to|can) i (stop|close|take you off|remove you|leave you alone|quit|give up)"
    r"|\b(stop|quit) (reaching out|emailing|writing|following up|contacting)\b[^.\n]{0,40}\?"
    r"|\bclose (your|the|this) file\b"
    r"|\b(soll|darf|sollte) ich (mich )?(nicht mehr|aufhoren|ihre akte|die akte|keine|ihren vorgang|nicht weiter)"
    r"|\b(dois-je|je dois|faut-il|est-ce que je dois|puis-je|je peux) (arreter|cesser|fermer|clore|cloturer)"
    r"|\bje (ferme|clos|cloture) (votre|ton|le) dossier"
    r"|\b(dejo|paro|dejamos) de (escribir|contactar|insistir)|\b(cierro|cerramos) (tu|su|el) (expediente|caso)"
    r"|\b(smetto|devo smettere|smettiamo) di (scriver|contattar|insister)|\bchiudo (la|il) (pratica|fascicolo|tua|sua)"
    r"|\b(zal|moet|mag) ik (stoppen|ophouden|je dossier|uw dossier|het dossier)"
    r"|\b(devo|posso) (parar|deixar) de|\b(fecho|encerro) (o|seu|teu|o seu|o teu) (processo|ficheiro|cadastro|contato)"
    r"|\bczy (mam|moge|powinienem|powinnam) (przestac|zamknac|dac spokoj)"
)
_WORD_RE = re.compile(r"[a-z]+")
QUOTE_CHARS = 2000  # the question stands near the top of the mail replied to


def assent_to_stop(text: str, new: str) -> str:
    """The words of ``new`` (the person's own words of ``text``, a whole reply) when they only assent to the
    question of stopping asked in the quote under them; "" otherwise."""
    answer = " ".join(new.split())
    folded = fold(answer)
    if not folded or len(folded) > 60:
        return ""
    words = _WORD_RE.findall(folded)
    assent = bool(words) and words[0] in _FIRST and all(word in _ASSENT for word in words)
    if not (assent or _CLOSE_RE.search(folded)):
        return ""
    start = text.find(new)
    quote = text[start + len(new) :] if start >= 0 else text
    return answer if _STOP_QUESTION_RE.search(fold(quote[:QUOTE_CHARS])) else ""
