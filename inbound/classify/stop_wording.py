"""The words a person uses to stop our mail, and to say they are away: one place for ingestion and the inbox.

Ingestion (reply.py, autoreply.py) decides on these patterns, and the replies inbox (intent.py) suggests its
Unsubscribe and Out-of-office categories from the same ones, so the two cannot drift apart. Pure: no ORM.

``unsubscribe_phrase(text)`` finds a request to stop receiving mail in the person's own new text (the quote
already cut): in English, German, French and Spanish, and the common Italian, Portuguese, Dutch and Polish
forms. A request is imperative or first-person wording ("please remove me", "I'd like to unsubscribe from
these emails", "Je ne veux plus recevoir vos e-mails", "dadme de baja", "Do not email this address again");
a request that mentions a broken unsubscribe link ("the unsubscribe link doesn't work, please remove me") is
one. Not a request:

- a negated one ("please don't remove me", "ich möchte mich nicht abmelden", "no quiero darme de baja");
- any, in a reply that asks to be put back on the list ("I clicked unsubscribe by mistake, please re-add me");
- unsubscribing someone or something else ("how do I unsubscribe my team from X?", "remove a client");
- a mention of an unsubscribe link, page or button on its own ("the unsubscribe link is broken");
- a footer: a newsletter's or our own List-Unsubscribe footer ("To unsubscribe from these emails, click
  here", a line with a link), the signature ("-- " and below) and anything after the first eight lines.

The phrases here are precise; the opt-out guard (optout.py) adds, under the same negation, link and
someone-else rules, the wording they miss (typos, no key word, more languages), and it fails safe: a missed
request leaves the address unsuppressed for the person's other sequences and the next import, while a wrong
one costs a follow-up. ``unsubscribe_spans`` returns both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

from . import optout, someone_else
from .boilerplate import NEWSLETTER_LINE_RE, starts_boilerplate
from .negation import asks_back_in, negated_after, negated_before
from .someone_else import said_of_another

# The whole subject, not a word in it: "Re: Stop losing leads" is a reply.
UNSUBSCRIBE_SUBJECT_RE = re.compile(
    r"^\W*((re|aw|sv|fw|fwd|wg|tr|rv)\s*:\s*)*(unsubscribe|remove me|remove|opt[ -]?out|stop)\W*$", re.I
)

# A reply that is nothing but the word (its first line): "STOP", "Unsubscribe.", "BAJA".
_BARE_WORD_RE = re.compile(
    r"^\W*(stop|unsubscribe|remove me|opt[ -]?out|baja|abmelden|austragen|désabonnement|désinscription"
    r"|uitschrijven|afmelden|disiscrivimi|cancelar inscrição)\W*$",
    re.I,
)

_ME = r"(me|us|myself|ourselves)"
_MAIL = r"(e-?mails?|mails?|messages?|newsletters?|marketing|outreach)"
_REQUESTS = {
    "en": (
        r"\bunsubscribe\b", r"\bremove (me|us)\b",
        r"\bremove (my|our|this) (e-?mail|address|name|contact|details|data|company|business|domain)",
        r"\btake (me|us)\b.{0,30}\boff\b", r"\btake (my|our|this) (e-?mail|address|name) off\b",
        r"\bstop (e-?mailing|sending|contacting|writing to|messaging|spamming)\b",
        r"\b(do not|don't|dont|never) (e-?mail|contact|write to|message|mail|send (any )?(more )?e-?mails to)"
        r" (me|us|this (e-?mail )?address|this account)( again)?\b",
        r"\b(do not|don't|dont|no longer) (wish|want|care) to (receive|hear from|be contacted)",
        r"\b(do not|don't|dont) (want|need) (any )?(more|further) " + _MAIL,
        r"\bopt (me|us) out\b", r"\b(want|like|wish|need) to opt[ -]?out\b", r"\bno (more|further) " + _MAIL,
        r"\b(want|like|wish|need|ask) to be (removed|taken off|unsubscribed)\b",
        r"\bdelete (my|our) (data|details|personal data|e-?mail|address|contact)",
    ),
    "de": (
        r"\b(abmelden|austragen|abbestellen)\b", r"\btragen sie (mich|uns)\b.{0,20}\baus\b",
        r"\b(melden|streichen|nehmen|entfernen) sie (mich|uns)\b", r"\baus (ihrem|dem|eurem|diesem) verteiler",
        r"\bkeine (weiteren )?(e-?mails|nachrichten|mails|werbung|post|newsletter) mehr",
        r"\bkeine weiteren (e-?mails|nachrichten|mails|zusendungen)", r"\bnicht mehr (zu )?(kontaktieren|anschreiben)",
        r"\b(kontaktieren|schreiben|mailen) sie (mich|uns|mir) (bitte )?nicht mehr",
        r"\bhören sie auf,? (mir|uns) zu schreiben",
        r"\b(löschen|entfernen) sie (bitte )?(meine|unsere) (daten|kontaktdaten|adresse|e-?mail)",
        r"\b(meine|unsere) (daten|kontaktdaten|adresse|e-?mail-adresse) (zu )?löschen",
    ),
    "fr": (
        r"désabonn", r"désinscri", r"\bretirez[- ](moi|nous)\b", r"\b(me|nous) retirer de\b",
        r"\b(retirez|supprimez|effacez|supprimer|effacer) (mon|notre|mes|nos) (adresse|e-?mail|données|coordonnées)",
        r"\bne (veux|voulons|souhaite|souhaitons|désire) plus (recevoir|être contactée?s?|de sollicitations)",
        r"\bne plus (me |m'|nous )?(recevoir|contacter|écrire|envoyer)", r"\bne (m'|me |nous )envoyez plus\b",
        r"\barrêtez de (m'|me |nous )?(écrire|envoyer|contacter)",
    ),
    "es": (
        r"\b(dar|darme|darse|dame|denme|dadme|darnos|dennos|nos) de baja\b",
        r"\b(elimínenme|eliminadme|bórrenme|borradme|sáquenme|sacadme|quítenme|quitadme)\b",
        r"\bme eliminen de\b", r"\beliminar(me)? de (su|la|vuestra) lista",
        r"\b(borren|eliminen|borrar|eliminar|borrad|eliminad) (mi|mis|nuestros?) (dirección|correo|datos|email)",
        r"\bdejen de (escribirme|enviarme|contactarme|escribirnos|enviarnos|contactarnos)\b",
        r"\bno (me|nos) vuelvan a (contactar|escribir)",
        r"\bno quiero (recibir )?más (correos|emails|mensajes|e-mails)",
        r"\bno quiero recibir más\b", r"\bno quiero que me (contacten|escriban) más\b",
        r"\bno me (envíe|envíen|escriba|escriban|contacte|contacten) más\b",
    ),
    "it/pt/nl/pl": (
        r"\bcancella(mi|temi|rmi)\b", r"disiscriv", r"\brimuove(temi|rmi)\b",
        r"\bnon (scrivetemi|scrivermi|contattarmi|contattatemi)\b",
        r"\bdescadastr", r"\bremover da lista\b", r"\bcancelar (a )?inscrição", r"\bremovam-me\b",
        r"\bremova (o )?meu (e-?mail|endereço|contato)", r"\bnão quero receber mais\b",
        r"\buitschrijven\b", r"\bschrijf (me|mij|ons) uit\b", r"\bafmelden\b", r"\bverwijder (mij|me|ons|mijn)\b",
        r"\bwypisz mnie\b", r"\busuń mnie\b", r"\bwypisać\b",
    ),
}
UNSUBSCRIBE_RE = re.compile("|".join(p for patterns in _REQUESTS.values() for p in patterns), re.I)

# A footer line, not the person's words: a link, or the instructions newsletters and our own
# List-Unsubscribe footer give ("To unsubscribe from these emails, ...", "You can unsubscribe at any time").
FOOTER_LINE_RE = re.compile(
    r"https?://|mailto:|you (are )?receiv(ed|ing) this|click here|manage (your )?(subscription|preferences)"
    r"|^\W*(to|if you (would like|wish|want|prefer|'d like|’d like) to) (unsubscribe|opt out|stop receiving)"
    r"|\byou (can|may) (unsubscribe|opt out)|\bunsubscribe (here|at any time|anytime)"
    # The same footers in the other languages: "cliquez ici", "Para deixar de receber ..., clique aqui", a link bar.
    r"|cliquez ici|hier klicken|klicken sie hier|haga clic|haz clic|clique aqu[ií]|clicca qui|klik hier"
    r"|kliknij (tutaj|tu)"
    r"|^\W*(pour (vous )?(désabonner|désinscrire)|para (darse de baja|dejar de recibir|deixar de receber)"
    r"|per (disiscriverti|non ricevere più)|om (je|u) af te melden|zum abmelden|um sich abzumelden|aby (się wypisać"
    r"|zrezygnować))"
    r"|\|\s*(impressum|datenschutz|privacy|imprint|mentions légales|aviso legal|privacidad)\b",
    re.I,
)
_SIGNATURE_LINE = {"--", "-- "}
REQUEST_LINES = 8  # requests to stop are short and come first; signatures and disclaimers come later

# Someone or something else taken off: "unsubscribe my team", "remove one of our users", "a client".
_OTHERS_AFTER_RE = re.compile(
    r"^\s+(?!(me|us|myself|ourselves)\b)(you\b|((one|some|all|each|any|two|three) of )?"
    r"((my|our|the|a|an|his|her|their|this|that|these|those|your)\s+)?(\S+\s+){0,2}?(team|users?|staff|employees?|customers?|colleagues?|clients?|members?|accounts?|subscribers?"
    r"|contacts?|people|recipients?|students?|kids?|children|son|daughter|wife|husband|partner|mum|mom|dad)\b)"
    # The same in the other languages: "retirer ma collègue Élodie", "dar de baja a mis compañeros".
    r"|^\s+(a\s+)?(ma|mon|mes|notre|nos|mis?|nuestr[oa]s?|la mia|il mio|i miei|le mie|a minha|o meu|os meus|as minhas"
    r"|minha|meu|mijn|onze)\s+(\S+\s+){0,2}?(coll[eè]gues?|collaborat(eur|rice)s?|[ée]quipe|compa[ñn]er[oa]s?|colegas?"
    r"|equipo|emplead[oa]s|colleg(a|hi|he)|squadra|dipendenti|equipa|funcion[áa]ri[oa]s|collega'?s|medewerkers)\b",
    re.I,
)
_SELF_RE = re.compile(r"\b(me|us|my|our|mich|uns|moi|nous|mon|mes)\b|(me|nos)$", re.I)
# In a question, taking oneself off something that is not our mail: "how do I unsubscribe from the X digest?"
_OTHER_SOURCE_AFTER_RE = re.compile(
    r"^\s+from\s+(?!(you|your|these|this|the(se)? (e-?mails?|list|mailing|messages?)|future|all|further|any)\b)",
    re.I,
)
# The link, page or button named, not used: "the unsubscribe link doesn't work", "le lien de désinscription".
_LINK_AFTER_RE = re.compile(
    r"^[ \t\"'“”-]*(\w+[ \t\"'“”-]+){0,2}?(link|button|page|option|url|lien|enlace|knopf)\b", re.I)
_LINK_BEFORE_RE = re.compile(
    r"\b(liens?|boutons?|pages?|enlaces?|links?)( de| para| zum| to| di| per| do| om)?\s*$", re.I)


def unsubscribe_phrase(text: str) -> str:
    """The words asking to stop our mail in a person's new text, or "" when it asks for nothing of the kind."""
    spans = unsubscribe_spans(text)
    return text[spans[0][0] : spans[0][1]] if spans else ""


def unsubscribe_spans(text: str) -> list[tuple[int, int]]:
    """Where the new text asks to stop our mail: (start, end) of each request, first lines only."""
    spans: list[tuple[int, int]] = []
    if asks_back_in(optout.fold(text[:_BACK_IN_CHARS])):
        return spans  # "I clicked unsubscribe by mistake, please re-add me": the words tell what happened
    for seen, start_of_line, line in _request_lines(text):
        if seen == 1 and (bare := _BARE_WORD_RE.search(line)):
            spans.append((start_of_line + bare.start(1), start_of_line + bare.end(1)))
            continue
        spans += [(start_of_line + start, start_of_line + end) for start, end in _candidates(line)
                  if _is_request(line, start, end)]
    return sorted(set(spans))


def stop_words_of_another(text: str) -> bool:
    """Whether words of stopping in the new text's first lines are said of someone or something else ("please take
    her off your list", "stop sending me time slots": someone_else.py). The learned model is then not asked whether
    the reply asks to stop, as after any rule that set such words aside (optout.stop_set_aside)."""
    return any(said_of_another(line, start, end)
               for _, _, line in _request_lines(text) for start, end in _candidates(line))


def taken_off_by_pronoun(text: str) -> str:
    """The words of a request in the new text's first lines that takes "her" or "him" off, with no word of that
    person having left (someone_else.taken_off_by_pronoun), or "": who is meant may be the person written to."""
    for _, _, line in _request_lines(text):
        for start, end in _candidates(line):
            if someone_else.taken_off_by_pronoun(line, start, end):
                return line[start:end]
    return ""


def _request_lines(text: str) -> Iterator[tuple[int, int, str]]:
    """(how many lines read so far, where the line starts, the line) of the lines a request is read in: the first
    REQUEST_LINES lines with words, up to a signature, a mail app's line or a notice (boilerplate.py), footers and a
    company newsletter's lines left out."""
    offset = seen = 0
    for line in text.split("\n"):
        start_of_line, offset = offset, offset + len(line) + 1
        if not line.strip():
            continue
        if line.strip() in _SIGNATURE_LINE or (seen and starts_boilerplate(line)):
            return
        seen += 1
        if seen > REQUEST_LINES:
            return
        line = line[:_LINE_LIMIT]
        if not footer_line(line):
            yield seen, start_of_line, line


def footer_line(line: str) -> bool:
    """Whether a line is a footer's (FOOTER_LINE_RE) or the company newsletter's own (boilerplate.py), not the
    person's words: neither ingestion nor the model reads it."""
    return bool(FOOTER_LINE_RE.search(line) or NEWSLETTER_LINE_RE.search(line))


def _candidates(line: str) -> list[tuple[int, int]]:
    """The words of stopping in a line: the phrases above, then the guard's wording and typos (optout.py)."""
    found = islice(UNSUBSCRIBE_RE.finditer(line), _MATCHES_PER_LINE)
    return [(m.start(), m.end()) for m in found] + optout.stop_spans(line)[:_MATCHES_PER_LINE]


_WINDOW = 200
_BACK_IN_CHARS = 3000
_MATCHES_PER_LINE = 10
_LINE_LIMIT = 2000  # characters of one line read: a request is a sentence, not a pasted page


def _is_request(line: str, start: int, end: int) -> bool:
    # The request's own sentence is all that counts, and a bounded window keeps a huge line cheap.
    before, after = line[max(0, start - _WINDOW) : start], line[end : end + _WINDOW]
    if negated_before(before) or negated_after(line[start : start + _WINDOW]):
        return False
    if said_of_another(line, start, end):
        return False
    if _LINK_AFTER_RE.search(after) or _LINK_BEFORE_RE.search(before) or optout.is_topic(after):
        return False
    if not _SELF_RE.search(line[start:end]) and _OTHERS_AFTER_RE.search(after):
        return False
    sentence_end = re.search(r"[.!?\n]", after)
    if sentence_end and sentence_end.group() == "?" and _OTHER_SOURCE_AFTER_RE.search(after):
        return False
    return not optout.about_others_at(line, start)


# Strong first-person out-of-office wording only: a person may mention a holiday in passing.
OOO_BODY_RE = re.compile(
    r"this is an? automat(ed|ic) (reply|response|message|notification)"
    r"|i am (currently )?(out of (the )?office|away from (the )?office"
    r"|on (annual |parental |maternity )?(leave|vacation|holiday))"
    r"|i('m| am) (currently )?out of (the )?office"
    r"|i will be out of (the )?office|with (limited|no) access to (my )?e-?mail"
    r"|ich bin (derzeit |zurzeit |momentan |bis )?.{0,40}(nicht im büro|abwesend|im urlaub)"
    r"|je suis (actuellement )?absent|estoy (actualmente )?fuera de la oficina|sono (attualmente )?fuori ufficio"
    r"|ik ben (momenteel )?(afwezig|niet aanwezig|met vakantie)",
    re.I,
)
