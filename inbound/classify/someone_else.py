"""Words of stopping said of someone or something else, not of our mail to the writer: someone else taken off by name
or pronoun ("remove Anna Berg from your list, she left"), a scheduling detail ("stop sending me time slots"), an
old address ("delete my old address and use this one") or the thread at hand ("take me off this thread and loop
in Ben"). stop_wording.py reads no request there, and the replies inbox (intent.py) no Unsubscribe phrase; the
learned model reads the rest. Pure.
"""

from __future__ import annotations

import re

from .optout import fold

# Someone else taken off, by name or pronoun: "remove Anna Berg from your list", "take her off your list",
# "streichen Sie Frau Roth aus dem Verteiler", "quiten a Marta Gil de sus envíos". Read on the text as written (a
# name is a capitalised word), right after the request's verb or right before a request without one.
_TITLE = (r"(?:Mr|Mrs|Ms|Miss|Dr|Frau|Herrn?|M|Mme|Mlle|Monsieur|Madame|Sr|Sra|Srta|Señora?|Sig|Sig\.ra|Signora?"
          r"|Dott|Dhr|Mevr|Mevrouw|Meneer|Pan|Pani|Pana|Panią|Senhora?|de heer)\.?")
_NAME = (r"(?!(?:Me|Us|My|Our|This|That|These|All|Everyone|Everybody|Any|It|Please|Sie|Ihr\w*|Mich|Uns|Moi|Nous"
         r"|Mij|Ons|Mnie|Nas|Mis?|Mes|Mon|Mein\w*|Unser\w*|Notre|Nos|The|Your|You|Info|Sales|Contact|Kontakt|Email"
         r"|Mail)\b)[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ]+")
_COLLEAGUE = (r"(?i:(?:(?:my|our|meine?|unsere?|ma|mon|mes|mi|mis|la mia|il mio|a minha|o meu|minha|meu|mijn|onze"
              r"|moj\w*|moją)\s+)?(?:colleague|kollegin|kollege|kollegen|collègue|collegue|compañera?|companera?"
              r"|collega|colega|koleżank\w*|kolezank\w*|koleg\w*))")
_THIRD_PARTY_AFTER_RE = re.compile(
    rf"^-?\s*(?:(?:please|bitte|svp|por favor|per favore|alsjeblieft|aub|Sie|a|o)\s+)*"
    rf"(?:(?:her|him|ihn|hem|haar)\b|-(?:la|le|lui|lo|a|o)\b|{_TITLE}\s+{_NAME}|{_COLLEAGUE}\s+{_NAME}"
    rf"|{_NAME}(?:\s+{_NAME})?\s+(?:from|off|de|aus|von|da|dalla|dai|dagli|uit|van|z|ze|dos|das|del|des)\b)"
)
_THIRD_PARTY_BEFORE_RE = re.compile(
    rf"(?:\b(?:her|him|ihn|hem|haar)|Sie sie|(?:{_TITLE}|{_COLLEAGUE})\s+{_NAME}(?:\s+{_NAME})?"
    rf"|\b(?:take|get|put|nehmen Sie|streichen Sie|tragen Sie|haal)\s+{_NAME}(?:\s+{_NAME})?)"
    r"\s+(?:(?:please|bitte|alsjeblieft)\s+)?$"
)


# A pronoun joined to an infinitive or a plea, as Italian, Spanish and Portuguese write it: "toglierla", "borrarlo",
# "bórrenlo", "eliminá-la"; or put before it, as French and Portuguese do: "la retirer de votre liste", "que a
# retirem". It is someone else only where the line says that someone left ("elle a quitté la société. Merci de la
# retirer"): the same pronoun stands for the writer's own address too ("mon adresse … merci de la supprimer").
_ENCLITIC_RE = re.compile(r"(?:ar|er|ir|re|á|ê|í)-?(?:la|lo|le|li|los|las)$|(?:en|an)(?:la|lo|los|las)$", re.I)
_PRONOUN_BEFORE_RE = re.compile(r"\bque (?:a|o|as|os)\s+$", re.I)
_FRENCH_PRONOUN_BEFORE_RE = re.compile(r"\b(?:la|le|les|lui)\s+$", re.I)  # before an infinitive: "la retirer"
_DEPARTED_RE = re.compile(
    r"\b(left|retired|no longer (works|with)|moved on|passed away|quitte|retraite|n'est plus|ne (fait|travaille) plus"
    r"|est partie?|ausgeschieden|nicht mehr (bei|im|in|fur)|verlassen|in rente|in pension|im ruhestand|dejo|ha dejado"
    r"|jubil\w*|ya no (trabaja|esta)|fallec\w*|ha lasciato|in pensione|non lavora piu|non e piu|deixou|aposentad\w*"
    r"|reformad\w*|ja nao (trabalha|esta)|falec\w*|uit dienst|vertrokken|met pensioen|werkt (hier )?niet meer"
    r"|odszedl|odeszla|emeryt\w*|juz nie pracuje|nie pracuje juz|zmarl|zmarla)\b"
)


def _around(line: str, start: int, end: int) -> tuple[re.Match[str] | None, str, str]:
    """The request's verb (its first word), what follows the verb and what comes before the request."""
    verb = re.match(r"\w+(?:-\w+)?", line[start:end])
    after = line[start + verb.end() : end + _REACH] if verb else ""
    return verb, after, line[max(0, start - _REACH) : start]


def third_party_at(line: str, start: int, end: int) -> bool:
    """Whether the request found at line[start:end] takes someone else off, named or "her"/"him", not the writer."""
    verb, after, before = _around(line, start, end)
    if _THIRD_PARTY_AFTER_RE.search(after) or _THIRD_PARTY_BEFORE_RE.search(before):
        return True
    pronoun = bool((verb and _ENCLITIC_RE.search(verb.group())) or _PRONOUN_BEFORE_RE.search(before)
                   or (verb and verb.group().lower().endswith(("er", "ir", "re"))
                       and _FRENCH_PRONOUN_BEFORE_RE.search(before)))
    return pronoun and bool(_DEPARTED_RE.search(fold(line)))


# A request whose object is a scheduling detail, an old address or the conversation at hand asks nothing of our mail
# as such: "stop sending me time slots, I've booked", "arrêtez de m'envoyer des créneaux", "delete my old address and
# use this one", "take me off this thread and loop in Ben" (mostly a referral: the model reads the rest).
_SCHEDULING_AFTER_RE = re.compile(
    r"^\W*(?:(?:me|us|mir|uns|m|nous|mi|mij|ons|mnie|sending|send|sturen|envoyer|mandar\w*|enviar\w*|wysylac"
    r"|schicken|des|les|de|the|any|more|mais|piu|altri|calendar|kalender|meeting|met|zu|two|three|four|several"
    r"|multiple|so|many|these|those|all|\d+|drei|vier|trois|tres|tre|drie|trzy)\W+){0,5}"
    r"(?:options|slots|time ?slots|times|dates|creneaux|horaires|terminvorschlag\w*|terminoption\w*|horarios|fechas"
    r"|orari|date|tijden|tijdstippen|datas|terminy|godziny)\b"
)
# Invitations or reminders stopped because the meeting is booked: "stop sending me calendar invitations, I already
# booked Wednesday", "ya no me manden más invitaciones, ya agendé". Said of other invitations ("stop sending me
# invitations to your webinars", "… I never booked"), with nothing booked, it is a request.
_INVITES_AFTER_RE = re.compile(
    r"^\W*(?:(?:me|us|mir|uns|m|nous|mi|mij|ons|mnie|sending|send|sturen|envoyer|mandar\w*|enviar\w*|wysylac"
    r"|schicken|des|les|de|the|any|more|mais|mas|piu|altri|calendar|kalender|meeting|meer|zu|these|all|your|vos"
    r"|sus|tus|questi|deze|tych|mehr|plus|standig|immer|neue|new|nouvelles|nuevas|nuove|nieuwe|nowe|novos|novas"
    r"|constantly|always|kolejnych|kolejne|weitere|further|autres|otras|altre|andere|inne|outros)\W+){0,5}"
    r"(?:invit\w*|invites?|convites?|einladung\w*|uitnodiging\w*|zaprosze\w*|reminders?|rappels?|recordatorios?"
    r"|lembretes?|promemoria|erinnerung\w*|herinnering\w*|przypomnien\w*)\b"
)
_BOOKED_RE = re.compile(
    r"(?<!never )(?<!not )(?<!nie )(?<!nicht )(?<!jamais )(?<!nunca )(?<!mai )(?<!nooit )"  # "I never booked"
    r"\b(booked|scheduled|agend\w*|reserv\w*|gebucht|eingetragen|ingepland|geboekt|prenotat\w*|fissat\w*"
    r"|marquei|marcad[oa]|marcamos|umowil\w*|umowion\w*|zarezerwowal\w*|zugesagt|accepted|angenommen|confirmed"
    r"|bestatigt|confirme|confirmado|confermat\w*|bevestigd|potwierdzi\w*)\b"
    r"|\b(in|im|en|nel|no|dans|w) (my |mein\w* |mi |mon |il mio |meu |mijn |moim )?(calendar|kalender|agenda"
    r"|calendario|kalendarzu)\b"
)
_OLD_ADDRESS_RE = re.compile(
    r"\b(old|previous|former|alte\w*|fruhere\w*|ehemalige\w*|ancienne?|antigu[oa]|viej[oa]|vecchi[oa]|oude|vorige"
    r"|antig[oa]|stary|starego|poprzedni\w*) (e-?mail|address|adresse|mail\w*|direccion|correo|indirizzo|adres"
    r"|endereco|adresu?|e-?mailadres)\b"
    r"|\b(e-?mail|address|adresse|adresu?|direccion|endereco|indirizzo) (antigu[oa]|antig[oa]|vecchi[oa])\b"
)
_THREAD_AFTER_RE = re.compile(
    r"^\W*(?:(?:me|mich|mij|moi|mnie|bitte|please|off|from|out|of|aus|uit|de|da|dalla|van|z|desta|deste|dem|der|this"
    r"|the|la|le|les|el|il|lo|het|den|die|das|cet|cette|ce|este|esta|questa|questo|deze|dit|tej|tego|ten)\W+){0,4}"
    r"(?:thread|cc|bcc|dw|kopii|kopia|copy|e-?mail chain|chain"
    r"|conversation|loop|echange|fil|copie|verlauf|hilo|conversacion|copia|conversazione|gesprek|conversatie"
    r"|mailwisseling|conversa|korespondencji|watku)\b"
)
_REACH = 60


def about_a_detail(line: str, start: int, end: int) -> bool:
    """Whether the request at line[start:end] stops a scheduling detail or removes an old address, not our mail."""
    folded = fold(line)
    after = folded[end : end + _REACH]
    return bool(_SCHEDULING_AFTER_RE.search(after) or _THREAD_AFTER_RE.search(after)
                or (_INVITES_AFTER_RE.search(after) and _BOOKED_RE.search(folded))
                or _OLD_ADDRESS_RE.search(folded[start : end + _REACH]))


_HIM_HER_AFTER_RE = re.compile(r"^-?\s*(?:(?:please|bitte|alsjeblieft)\s+)*(?:her|him|ihn|hem|haar)\b", re.I)
_HIM_HER_BEFORE_RE = re.compile(r"\b(?:her|him|ihn|hem|haar|Sie sie)\s+(?:(?:please|bitte|alsjeblieft)\s+)?$", re.I)


def taken_off_by_pronoun(line: str, start: int, end: int) -> bool:
    """Whether the request at line[start:end] takes "her" or "him" off, and the line says nothing of that person
    having left: an assistant answering for the person written to ("Ms. Grant receives a lot of mail. Please
    remove her from your list") writes so as often as a colleague names a referral."""
    _, after, before = _around(line, start, end)
    return bool((_HIM_HER_AFTER_RE.search(after) or _HIM_HER_BEFORE_RE.search(before))
                and not _DEPARTED_RE.search(fold(line)))


def said_of_another(line: str, start: int, end: int) -> bool:
    """Whether the request at line[start:end] is said of someone else or of a detail, not of our mail to the
    writer (third_party_at, about_a_detail)."""
    return third_party_at(line, start, end) or about_a_detail(line, start, end)
