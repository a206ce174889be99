"""Negation of a request to stop, read the same by the phrases (stop_wording.py), the opt-out guard (optout.py) and
the replies inbox (intent.py): "please don't remove me", "no quiero darme de baja", "tragen Sie mich nicht aus". Pure.
"""

from __future__ import annotations

import re

# Just before the request, in its clause: a negation, with nothing but "please", "want to" and the like
# between ("please don't remove me", "I don't want to unsubscribe", "bitte nicht abmelden").
_NEGATIONS = "not never dont didnt doesnt wont nicht nie no non não nao niet ne keinesfalls niente".split() + [
    "no need to", "no need for", "auf keinen fall", "nicht nötig", "nicht notwendig", "non c'e bisogno di",
    "non c'è bisogno di", "non serve", "no hace falta", "no es necesario", "nada de", "nao precisa", "não precisa",
    "não é preciso", "nao e preciso", "não é necessário", "nao e necessario", "hoeft niet", "niet nodig",
    "nie musi", "nie trzeba", "nie ma potrzeby", "pas de", "pas besoin de", "inutile de", "pas la peine de"]
_BETWEEN = ("please pls to i we you want wish need would like do be ever bitte sie mich uns möchte will wollen quiero"
            " queremos me nos voglio quero ik wil mnie proszę prosze den chcę chce się sie mi ask asking pido que"
            " chiedo di vraag vragen om peço going gonna pan pani panie o"
            # "no te voy a pedir que me borres", "non le chiederò di togliermi", "não vou pedir para me tirar"
            " te le les voy vamos va a pedir pedirte pedirle pedirles chiederò chiedero chiederle chiederti vou vai"
            " para vi ci"
            # "nie będę prosić o wypisanie", said of a request the writer will not make
            " będę bede prosić prosic prosił prosil prosiła prosila"
            # "no me deja darme de baja" (it does not let me), said of another sender
            " deja dejan dejaba deixa deixam").split()
_NEGATED_BEFORE_RE = re.compile(
    rf"(?:\b(?:{'|'.join(_NEGATIONS)})\b|n['’]t)\s*(?:(?:{'|'.join(_BETWEEN)})\s+)*$", re.I
)
# French wraps the verb: "je ne cherche pas à me désinscrire", "je ne veux pas me désabonner", "je ne vais pas vous
# demander de me retirer" (the writer as its
# object: "je ne veux pas recevoir vos mails" still asks to stop).
_NE_PAS_BEFORE_RE = re.compile(
    r"\bne\s+\w+\s+pas\s+(?:(?:vous|te)\s+)?(?:(?:demander|prier)\s+)?"
    r"(?:(?:(?:à|a|de|d['’])\s*)?(?:me\s+|m['’]|nous\s+)|(?:à|a|de\s|d['’])\s*)$", re.I)
_CLAUSE_END_RE = re.compile(r"[,;:.!?()\u2013\u2014]|\s-\s|\b(but|aber|mais|pero|(?<!nie )ma|mas|maar)\b", re.I)
NEGATION_WINDOW = 200


def negated_before(before: str) -> bool:
    """Whether the words just before a request, in its clause, negate it ("please don't", "no quiero")."""
    before = before[-NEGATION_WINDOW:]
    clause_start = max((m.end() for m in _CLAUSE_END_RE.finditer(before)), default=0)
    clause = before[clause_start:]
    return bool(_NEGATED_BEFORE_RE.search(clause) or _NE_PAS_BEFORE_RE.search(clause))


# German and Dutch put the negation after the verb: "nehmen Sie mich bitte nicht raus", "tragen Sie mich nicht aus",
# "Austragen müssen Sie mich aber nicht", "verwijder mij alsjeblieft niet", "Afmelden hoeft niet". "nicht mehr",
# "niet meer" (no longer) and "nicht nur" (not only) ask to stop all the same.
_AFTER_VERB = ("sie du ihr mich uns mir bitte doch aber auch ja jetzt noch müssen musst müsst brauchen brauchst"
               " braucht sollen sollten dürfen u je jullie mij me ons alsjeblieft alstublieft aub hoeft hoeven hoor"
               " maar ook nog deswegen deshalb dafür darum").split()
_NEGATED_AFTER_RE = re.compile(
    rf"^\S*(?:[ \t]+(?:{'|'.join(_AFTER_VERB)}))*[ \t]+(?:nicht|nirgends|nirgendwo|keinesfalls|auf keinen fall|niet"
    r"|nergens)\b"
    r"(?![ \t]+(?:mehr|länger|langer|weiter|wieder|nur|bloß|bloss|allein|meer|alleen)\b)",
    re.I,
)
# A request asked and answered no at once: "Remove me? No need.", "Abmelden? Nein, bloß nicht."
_ANSWERED_NO_RE = re.compile(
    r"^[^.!?\n]{0,30}\?\s*(?:no need|not needed|no,|no\.|no!|nope|nah|nein|kein bedarf|non[,.!]|pas besoin"
    r"|pas la peine|no hace falta|no es necesario|niet nodig|nee[,.!]|nie trzeba|nie[,.!]|nao precisa|não precisa"
    r"|non serve|non c'è bisogno)",
    re.I,
)


def negated_after(request: str) -> bool:
    """Whether the words of a request, from its first word on, negate it after its verb ("tragen Sie mich nicht
    aus") or answer it no ("Remove me? No need.")."""
    request = request[:NEGATION_WINDOW]
    return bool(_NEGATED_AFTER_RE.search(request) or _ANSWERED_NO_RE.search(request))


# The writer asks to be put back on the list: an unsubscribe undone ("I clicked unsubscribe by mistake, can you
# re-add me?", "j'ai cliqué sur « se désinscrire » par erreur, vous pouvez me réinscrire ?"). Words of stopping in
# such a reply tell what happened, not what the writer wants now. Only the wish to be back counts, not a mistake
# alone ("unsubscribe me, I was added by mistake" asks to stop), and not a negated one ("do not re-add me").
# Read on folded text (optout.fold).
_BACK_IN_RE = re.compile(
    r"\b(re-?subscribe|re-?add (me|us)|add (me|us) back|put (me|us) back|sign (me|us) (back )?up again"
    r"|subscribe (me|us) again|reinscri\w*|re-inscri\w*|reabonn\w*"
    r"|(volver|vuelvan|vuelve|volved) a (suscribir|inscribir|dar(me|nos)? de alta|agregar|anadir|apuntar)\w*"
    r"|(darme|darnos) de alta (de nuevo|otra vez|nuevamente)|reapunt\w*"
    r"|wieder (an|ein|auf)(zu)?(melden|tragen|nehmen)|(erneut|wieder) in (den|die|ihren|ihre) (verteiler|liste)"
    r"|reiscriv\w*|(iscriv|rimett)\w* di nuovo|di nuovo (in|nella) lista"
    r"|opnieuw (aan|in)(melden|schrijven|te schrijven)|weer (aan|in)(melden|schrijven)|weer op de \w*lijst"
    r"|reinscrev\w*|(inscrev|cadastr)\w* (de novo|novamente)|recadastr\w*|recoloc\w*( me)? na lista"
    r"|(coloca|coloque|coloquem|poe|ponha|ponham|bota)( me| nos)? de volta"
    r"|ponownie (zapis|dopis)\w*|(zapisz|dopisz)\w* (mnie |nas )?(z powrotem|ponownie))\b"
    # "vous me remettez ?", "mi rimettete nella lista?": not "me remettre le devis", "mi rimettete in contatto"
    r"|\bme remett(ez|re|riez)\b(?!\s+(le|la|les|l'|un|une|des|en|ce|cette|votre|vos|mon|ma|mes|au|du)\b)"
    r"|\bmi rimett(ete|ereste|esse)\b(?!\s+(il|la|lo|i|gli|le|un|una|in contatto|in copia)\b)"
)


def asks_back_in(folded: str) -> bool:
    """Whether a folded text asks to be put back on the list, so that its words of stopping request nothing."""
    return any(not negated_before(folded[max(0, m.start() - NEGATION_WINDOW) : m.start()])
               for m in _BACK_IN_RE.finditer(folded))
