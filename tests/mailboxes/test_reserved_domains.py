"""A sending domain reserved for tests and documentation (RFC 2606, RFC 6761: .test, .example, .invalid, .localhost,
example.com/.net/.org) can never pass SPF, DKIM or DMARC in the public DNS: the mailbox says so in one line, never
counts it as failing (so never pauses for it), and looks nothing up. With a resolver of its own
(OUTREACH_DNS_RESOLVER, which may serve a private test zone) such a domain is checked like any other."""

from __future__ import annotations

import pytest
from django.urls import reverse

from mailboxes.domain_auth import DomainAuth, RecordCheck, Verdict
from mailboxes.models import Mailbox
from sequences.services.domain_auth import domain_auth_sweep, mailbox_domain_auth_check, mailbox_domain_auth_record
from tests.factories import MailboxFactory

# The check opens no transaction around its lookups: these tests run outside one.
pytestmark = pytest.mark.django_db(transaction=True)

ONE_LINE = ("SPF, DKIM and DMARC: cannot be checked — demo.outreach.test is a reserved test domain, which no public "
            "DNS server answers for")


def three_failures(domain: str) -> DomainAuth:
    """What a lookup of a reserved name in the public DNS reads: every record missing."""
    return DomainAuth(domain, (RecordCheck("SPF", Verdict.FAIL, "missing — Gmail and Outlook reject bulk mail."),
                               RecordCheck("DKIM", Verdict.FAIL, "missing — no key at s1._domainkey."),
                               RecordCheck("DMARC", Verdict.FAIL, "missing — Gmail and Outlook reject it.")))


@pytest.mark.parametrize("resolver", ["", "off"])  # the system's resolver (the public DNS), or no lookups at all
@pytest.mark.parametrize("address", ["sales@demo.outreach.test", "a@x.example", "a@mail.invalid", "a@localhost",
                                     "a@box.localhost", "a@example.com", "a@mail.EXAMPLE.org", "a@example.net."])
def test_a_reserved_domain_is_one_line_and_never_failing(settings, address, resolver):
    settings.OUTREACH_DNS_RESOLVER = resolver  # nothing is looked up: a reserved name is never asked for
    mailbox = MailboxFactory(address=address, dkim_selector="s1")
    report = mailbox_domain_auth_check(mailbox_id=mailbox.pk)
    assert len(report.checks) == 1 and report.verdict == Verdict.RESERVED
    assert "is a reserved test domain" in report.summary and "\n" not in report.summary
    mailbox.refresh_from_db()
    assert (mailbox.auth_verdict, mailbox.auth_failing_since) == ("reserved", None)


@pytest.mark.parametrize("address", ["a@example.co", "a@test.com", "a@notexample.com", "a@mytest", "a@localhost.com",
                                     "a@example.com.au"])
def test_other_domains_are_checked(settings, address):
    settings.OUTREACH_DNS_RESOLVER = "off"  # no lookup: every record "could not check", one line each
    report = mailbox_domain_auth_check(mailbox_id=MailboxFactory(address=address).pk)
    assert [c.record for c in report.checks] == ["SPF", "DKIM", "DMARC"] and report.verdict == Verdict.UNKNOWN


def test_a_recorded_failure_of_a_reserved_domain_is_recorded_as_reserved(settings, client, django_user_model):
    # The form's check hands its own report over to be recorded: the same one line is recorded, not three failures;
    # a failing-since left by an earlier check is cleared (the records can never pass, so there is nothing to fix).
    settings.OUTREACH_DNS_RESOLVER = "off"
    mailbox = MailboxFactory(name="demo", address="sales@demo.outreach.test")
    mailbox_domain_auth_record(mailbox_id=mailbox.pk, report=three_failures("demo.outreach.test"))
    mailbox.refresh_from_db()
    assert (mailbox.auth_verdict, mailbox.auth_summary, mailbox.auth_failing_since) == ("reserved", ONE_LINE, None)
    assert domain_auth_sweep()["failing"] == 0

    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get(reverse("mailbox_list")).content.decode()
    assert f'<div class="small" id="domain-auth-demo"><span class="muted">{ONE_LINE}</span></div>' in page
    assert "Gmail and Outlook reject" not in page and "failing since" not in page


def test_with_a_resolver_of_its_own_a_reserved_name_is_checked(dns_server):
    # tests' DNS server serves bare.test: its missing records are failures, as on any domain.
    mailbox = MailboxFactory(address="sales@bare.test", dkim_selector="s1")
    report = mailbox_domain_auth_check(mailbox_id=mailbox.pk)
    assert [c.verdict for c in report.checks] == [Verdict.FAIL] * 3
    assert Mailbox.objects.get(pk=mailbox.pk).auth_failing_since is not None
