"""Free-mail and consumer mailbox domains: a reply from one never stops "everyone at the company".

A built-in list of the large consumer providers (and their country variants);
`stop_on_reply = "domain"` acts on a company's own domain only.
"""

from __future__ import annotations

FREE_MAIL_DOMAINS = frozenset(
    """
aol.com aim.com att.net bellsouth.net btinternet.com comcast.net cox.net earthlink.net charter.net verizon.net
sbcglobal.net optonline.net frontier.com windstream.net juno.com netzero.net rocketmail.com
gmail.com googlemail.com
outlook.com outlook.de outlook.fr outlook.es hotmail.com hotmail.co.uk hotmail.de hotmail.fr hotmail.es
hotmail.it live.com live.co.uk live.de live.fr msn.com passport.com
yahoo.com yahoo.co.uk yahoo.de yahoo.fr yahoo.es yahoo.it yahoo.ca yahoo.com.au yahoo.co.jp ymail.com
icloud.com me.com mac.com
proton.me protonmail.com protonmail.ch pm.me tutanota.com tutanota.de tuta.io
gmx.de gmx.net gmx.at gmx.ch gmx.com gmx.fr web.de t-online.de freenet.de arcor.de posteo.de mailbox.org
orange.fr wanadoo.fr free.fr laposte.net sfr.fr neuf.fr bbox.fr
telefonica.net terra.es movistar.es
libero.it virgilio.it tiscali.it alice.it
seznam.cz wp.pl o2.pl onet.pl interia.pl
mail.ru yandex.ru yandex.com rambler.ru list.ru bk.ru inbox.ru
qq.com 163.com 126.com sina.com yeah.net naver.com daum.net hanmail.net
zoho.com zohomail.com fastmail.com fastmail.fm hushmail.com mail.com email.com usa.com inbox.com
rediffmail.com hey.com duck.com
""".split()
)


def is_free_mail(domain: str) -> bool:
    """Whether a domain belongs to a consumer mail provider rather than to one company."""
    return domain.strip().lower().lstrip("@") in FREE_MAIL_DOMAINS
