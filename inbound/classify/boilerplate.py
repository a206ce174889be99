"""Where a person's own words end and what their mail app and their company add to every mail begins. Pure.

A reply's own words come first. Below them come a mail app's line ("Sent from my iPhone", "Von meinem iPhone
gesendet", "Outlook voor iOS downloaden"), then the company's boilerplate: a confidentiality notice, a privacy
notice that lists the reader's rights (erasure, objection: the very words of a data-protection demand), "follow
us", "think before you print", and the company newsletter's own sign-up and unsubscribe line. None of it is the
person's: intent.new_text, ingestion's reading of a request to stop (stop_wording.py) and of a data-protection
demand (data_requests.py) read up to the first such line that follows words of the person's own.
"""

from __future__ import annotations

import re

# A mail app's own line, in the eight languages of the tables and the model.
MOBILE_SIGNATURE_RE = re.compile(
    r"^\W*(sent from (my|outlook|yahoo|mail for)|sent (via|with) (my|the|outlook|gmail|spark|blackberry)"
    r"|get outlook for|(\w+ ){0,2}outlook (for|voor|für|pour|para|per|dla) (ios|android)"
    r"|outlook (voor|für) (ios|android) downloaden|envoy[ée] (de|depuis|à partir de) (mon|l'application|outlook)"
    r"|von meinem .{1,40} gesendet|gesendet (von|mit|vom) (meinem|meiner|outlook|mein|iphone|ipad|samsung)"
    r"|enviado (desde|de|do|a partir do) (mi|meu|o meu|a minha|outlook|iphone|ipad|samsung|android)"
    r"|inviato (da|dal mio|con)|verzonden (vanaf|met|via|van) |wys[łl]ane (z|ze|przy)"
    r"|enviado do meu)\b.{0,60}$",
    re.I | re.M,
)
# The first line of a confidentiality or privacy notice, or of the company's other lines under every mail: in the
# company's voice only ("Privacy notice:", "Wir verarbeiten Ihre Daten"), never words a person's own demand opens with
# ("Ai sensi dell'art. 17 …", "Conformément au RGPD, je …").
NOTICE_RE = re.compile(
    r"^\W*(confidentiality notice|disclaimer\b|if you (are not|have received this)"
    # "This message and any attachments are confidential", "Der Inhalt dieser E-Mail ist ausschließlich für ...
    # bestimmt", "Dit e-mailbericht is uitsluitend bestemd voor", "Informacje zawarte w tej wiadomości są poufne"
    r"|(this|the information|the content|diese|der inhalt|ce|les informations|le contenu|este|la información"
    r"|el contenido|esta|as informações|o conteúdo|questo|le informazioni|il contenuto|dit|de informatie|deze|ta"
    r"|informacje|treść)\b.{0,80}\b(confidential\w*|privileg\w*|intended (solely |only |exclusively )?for"
    r"|addressee\w*|vertraulich\w*|ausschließlich|bestimmt|confidenti\w*|destin[aeéi]\w*|riservat\w*"
    r"|vertrouwelijk\w*|uitsluitend|bestemd|poufn\w*|przeznaczon\w*|wyłącznie)"
    # privacy notices: "Privacy notice:", "Datenschutzhinweise:", "Klauzula informacyjna RODO", "Sus datos personales"
    r"|privacy (notice|policy|statement)|data protection( notice)?\s*:"
    r"|datenschutz(hinweis\w*|erklärung|information\w*)\s*:|wir verarbeiten ihre"
    r"|protection des données\s*:|politique de confidentialit"
    r"|protección de datos\s*:|política de privacidad|sus datos personales"
    r"|informativa (sulla )?privacy|privacyverklaring"
    r"|proteção de dados\s*:|aviso de privacidade|política de privacidade|klauzula informacyjna"
    r"|administratorem (\S+ ){0,2}danych"
    # follow us, and think before you print
    r"|follow us on|folgen sie uns|suivez-nous|síguenos|seguici su|volg ons|siga-nos|obserwuj nas"
    r"|(please )?(consider|think of) the environment|think before you print|bitte denken sie an die umwelt"
    r"|muss diese e-?mail wirklich|afin de contribuer au respect de l'environnement|pensez à l'environnement"
    r"|antes de imprimir|prima di stampare|denk aan het milieu|zanim wydrukujesz)",
    re.I | re.M,
)
# The company newsletter's own line: "Stay in the loop: sign up for our newsletter", "Unseren Newsletter können Sie
# jederzeit wieder abbestellen", "Afmelden kan altijd onderaan elke editie". Not "unsubscribe me from your newsletter".
NEWSLETTER_LINE_RE = re.compile(
    r"\b(our|unsere[nmrs]?|notre|nos|nuestr[oa]s?|la nostra|nostr[ao]|onze|nasz\w*|a nossa|nossa|o nosso)\s+(\w+\s+)?"
    r"(newsletter\w*|nieuwsbrief|infolettre|boletín|novedades)\b"
    r"|\b(afmelden|abmelden|abbestellen|unsubscribe|opt out|désinscri\w*|désabonn\w*|disiscri\w*|darse de baja"
    r"|wypisa\w*|zrezygnowa\w*|descadastr\w*)\b.{0,60}\b(at any time|anytime|jederzeit|à tout moment"
    r"|en cualquier momento|in qualsiasi momento|altijd|w każdej chwili|a qualquer momento|onderaan|at the bottom"
    r"|en bas de|am ende|in fondo|al final)"
    r"|\b(jederzeit|at any time|à tout moment|en cualquier momento|in qualsiasi momento|altijd|w każdej chwili"
    r"|a qualquer momento)\b.{0,40}\b(abbestellen|abmelden|unsubscribe|désinscri\w*|désabonn\w*|darse de baja"
    r"|disiscri\w*|afmelden|wypisa\w*|zrezygnowa\w*|descadastr\w*|cancelar)",
    re.I,
)


def own_words(text: str) -> str:
    """The text up to the first mail app's line or notice that follows words of the person's own."""
    cut = len(text)
    for pattern in (MOBILE_SIGNATURE_RE, NOTICE_RE):
        found = pattern.search(text, 0, cut)
        while found and not text[: found.start()].strip():  # a first line of that kind is the person's
            found = pattern.search(text, found.end(), cut)
        if found:
            cut = found.start()
    return text[:cut]


def starts_boilerplate(line: str) -> bool:
    """Whether a line is a mail app's line or the first of a notice: own_words cuts there."""
    return bool(MOBILE_SIGNATURE_RE.match(line) or NOTICE_RE.match(line))
