"""The connection check is no port scanner and no way into the private network (mailboxes.targets).

Mail hosts are public addresses on mail ports unless OUTREACH_ALLOW_PRIVATE_TARGETS lists them; what answers on
a port is shown only when it greets as an SMTP or IMAP server; IPv6 forms of private addresses are private;
names under .localhost are loopback; the Private CA field says nothing about paths outside its directories.
"""

from __future__ import annotations

import ipaddress
import os

import pytest

from mailboxes.checks import connection_check
from mailboxes.models import Mailbox
from mailboxes.targets import TargetRefused, address_problem, checked_address, mail_host_problem, url_problem
from mailboxes.tls import ca_file_problem, mailbox_connection_problems
from tests.security.trap import Trap

BANNER = b"SSH-2.0-OpenSSH_9.2p1 build-host-internal-7\r\n"


def test_a_mail_host_is_a_public_address_on_a_mail_port_unless_listed(settings):
    settings.OUTREACH_ALLOW_PRIVATE_TARGETS = []
    settings.OUTREACH_MAIL_PORTS = [25, 465, 587, 2525, 143, 993]
    assert mail_host_problem("192.0.2.1", 587) != ""  # documentation range: reserved, never global
    assert mail_host_problem("8.8.8.8", 587) == ""
    assert "not a mail port" in mail_host_problem("8.8.8.8", 5432)
    for private in ("127.0.0.1", "10.1.2.3", "192.168.0.10", "[::1]"):
        assert "OUTREACH_ALLOW_PRIVATE_TARGETS" in mail_host_problem(private, 25), private
    settings.OUTREACH_ALLOW_PRIVATE_TARGETS = ["10.0.0.0/8"]
    assert mail_host_problem("10.1.2.3", 25) == "" and mail_host_problem("10.1.2.3", 6379) == ""  # listed: any port
    problems = mailbox_connection_problems({"smtp_host": "8.8.8.8", "smtp_port": 6379, "smtp_username": "",
                                            "imap_host": "127.0.0.1", "imap_port": 993, "smtp_security": "tls",
                                            "imap_security": "tls"})
    assert "not a mail port" in problems["smtp_host"] and "private" in problems["imap_host"]


@pytest.mark.django_db
def test_an_unlisted_loopback_port_is_never_connected_to(settings):
    settings.OUTREACH_ALLOW_PRIVATE_TARGETS = []
    with Trap("smtp") as trap:
        mailbox = Mailbox(name="probe", address="a@acme.test", smtp_host="127.0.0.1", smtp_port=trap.port,
                          smtp_security="none", imap_host="127.0.0.1", imap_port=trap.port, imap_security="none",
                          imap_username="a", auth="oauth2")
        result = connection_check(mailbox)
    assert not result.passed and "private, loopback" in result.text
    assert trap.connections == 0


@pytest.mark.django_db
@pytest.mark.parametrize("side", ["smtp", "imap"])
def test_what_is_no_mail_server_is_not_echoed(side):
    with Trap("banner", banner=BANNER) as trap:
        mailbox = Mailbox(name="probe", address="a@acme.test", smtp_host="127.0.0.1", smtp_port=trap.port,
                          smtp_security="none", auth="oauth2")
        if side == "imap":
            mailbox.smtp_port, mailbox.imap_host, mailbox.imap_port = 1, "127.0.0.1", trap.port
            mailbox.imap_security, mailbox.imap_username = "none", "a"
        result = connection_check(mailbox)
    words = " ".join(s.detail for s in result.sending + result.reading)
    assert f"did not greet as an {side.upper()} server" in words
    assert "OpenSSH" not in words and "build-host" not in words


@pytest.mark.parametrize("address", [
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo, client 169.254.169.254 (obfuscated)
    "::a9fe:a9fe",  # IPv4-compatible
    "::ffff:169.254.169.254",  # IPv4-mapped
])
def test_an_ipv6_address_carrying_a_private_one_is_private(address):
    assert address_problem("h", ipaddress.ip_address(address), private_ok=False)
    assert url_problem(f"https://[{address}]/hook")


def test_a_public_ipv4_address_carried_in_nat64_is_allowed():
    assert address_problem("h", ipaddress.ip_address("64:ff9b::808:808"), private_ok=False) == ""


def test_localhost_names_are_loopback_and_never_resolved(settings):
    settings.OUTREACH_ALLOW_PRIVATE_TARGETS = ["127.0.0.0/8"]
    assert checked_address("relay.localhost", 25, private_ok=False) == "127.0.0.1"
    assert checked_address("LOCALHOST.", 25, private_ok=False) == "127.0.0.1"
    settings.OUTREACH_ALLOW_PRIVATE_TARGETS = []
    with pytest.raises(TargetRefused, match="loopback"):
        checked_address("anything.localhost", 25, private_ok=False)


def test_the_private_ca_field_tells_nothing_about_paths_outside_its_directories(settings, tmp_path):
    settings.OUTREACH_CA_DIRS = [str(tmp_path)]
    outside_real, outside_missing = "/etc/passwd", "/etc/no-such-file-4f1c"
    assert ca_file_problem(outside_real) == ca_file_problem(outside_missing).replace(outside_missing, outside_real)
    (tmp_path / "link.pem").symlink_to("/etc/passwd")
    assert "not under an allowed directory" in ca_file_problem(str(tmp_path / "link.pem"))
    assert "not under an allowed directory" in ca_file_problem(str(tmp_path / ".." / os.path.basename(
        str(tmp_path)) / ".." / "x.pem"))
