"""A small authoritative DNS server on 127.0.0.1 (UDP, dnspython's wire format) for tests and drills.

It answers from a dict of records: a name it holds with no record of the asked type is NODATA, a name it does not
hold is NXDOMAIN, a name listed in `servfail` answers SERVFAIL, one in `silent` gets no answer (a time-out).
"""

from __future__ import annotations

import socket
import threading

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class DnsServer:
    def __init__(self, records: dict[tuple[str, str], list[str]], *, servfail: tuple[str, ...] = (),
                 silent: tuple[str, ...] = ()):
        self.records = {(dns.name.from_text(n), t.upper()): v for (n, t), v in records.items()}
        self.names = {name for name, _ in self.records}
        self.servfail = {dns.name.from_text(n) for n in servfail}
        self.silent = {dns.name.from_text(n) for n in silent}
        self.queries: list[tuple[str, str]] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True, name="test-dns")
        self._stop = threading.Event()

    @property
    def address(self) -> str:
        """For OUTREACH_DNS_RESOLVER."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> DnsServer:
        self.sock.settimeout(0.1)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()

    def __enter__(self) -> DnsServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                query = dns.message.from_wire(data)
            except Exception:  # noqa: BLE001 - a malformed packet gets no answer
                continue
            answer = self._answer(query)
            if answer is not None:
                self.sock.sendto(answer.to_wire(), peer)

    def _answer(self, query: dns.message.Message) -> dns.message.Message | None:
        question = query.question[0]
        name, rdtype = question.name, dns.rdatatype.to_text(question.rdtype)
        self.queries.append((name.to_text(omit_final_dot=True), rdtype))
        if name in self.silent:
            return None
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        if name in self.servfail:
            response.set_rcode(dns.rcode.SERVFAIL)
        elif name not in self.names:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif values := self.records.get((name, rdtype)):
            response.answer.append(dns.rrset.from_text_list(name, 300, dns.rdataclass.IN, rdtype, values))
        return response


# The zone the tests and drills answer from (all under .test, RFC 2606). good.test passes every check;
# bare.test has only an address (no MX, no SPF, DKIM or DMARC); bad.test has each record broken;
# nomail.test exists but has no mail server; servfail.test answers SERVFAIL; anything else is NXDOMAIN.
ZONE: dict[tuple[str, str], list[str]] = {
    ("good.test", "TXT"): ['"v=spf1 include:_spf.google.com ~all"', '"google-site-verification=abc"'],
    ("good.test", "MX"): ["10 mx.good.test."],
    ("s1._domainkey.good.test", "TXT"): ['"v=DKIM1; k=rsa; " "p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"'],
    ("_dmarc.good.test", "TXT"): ['"v=DMARC1; p=none; rua=mailto:dmarc@good.test"'],
    ("bare.test", "A"): ["192.0.2.10"],
    ("bad.test", "TXT"): ['"v=spf1 include:_spf.google.com ~all"', '"v=spf1 mx -all"'],
    ("bad.test", "MX"): ["10 mx.bad.test."],
    ("s1._domainkey.bad.test", "TXT"): ['"v=DKIM1; k=rsa; p="'],
    ("_dmarc.bad.test", "TXT"): ['"v=DMARC1; p=maybe"'],
    ("nomail.test", "TXT"): ['"hello"'],
}
SERVFAIL = ("servfail.test", "s1._domainkey.servfail.test", "_dmarc.servfail.test")
