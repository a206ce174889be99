"""Domain authentication: SPF, DKIM and DMARC read from a local authoritative DNS server, said in words, recorded
on the mailbox, and a mailbox paused once its records have failed for the grace period."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from db.clock import db_now
from mailboxes.dns_lookup import domain_auth_lookup
from mailboxes.domain_auth import Answer, Lookup, Verdict, dmarc_check, spf_check
from mailboxes.models import Mailbox
from sequences.config.apply import config_apply
from sequences.config.export import sequence_export_toml
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from sequences.models import OperatorAction, TimelineEvent
from sequences.services.domain_auth import domain_auth_due, domain_auth_sweep, mailbox_domain_auth_check
from sequences.timeline import Event
from tests.factories import MailboxFactory, make_sequence
from tests.mailboxes.checking import submit


def words(domain: str, selector: str = "s1", smtp_host: str = "smtp.gmail.com") -> dict[str, tuple[str, str]]:
    report = domain_auth_lookup(domain=domain, selector=selector, smtp_host=smtp_host)
    return {c.record: (c.verdict.value, c.words) for c in report.checks}


def test_the_check_says_what_each_record_is_in_words(dns_server):
    good = words("good.test")
    assert good == {
        "SPF": ("pass", "present on good.test, ends in ~all (mail from other servers soft-fails SPF); it includes "
                        "_spf.google.com, the SPF name of smtp.gmail.com's provider."),
        "DKIM": ("pass", "a key is published at s1._domainkey.good.test."),
        "DMARC": ("pass", "present at _dmarc.good.test, p=none (monitoring only)."),
    }
    # An SMTP host of another provider: the record is read, and what it cannot show is said, not claimed.
    assert words("good.test", smtp_host="smtp.office365.com")["SPF"][1].endswith(
        "it does not include spf.protection.outlook.com, the SPF name smtp.office365.com's provider usually asks "
        "for — check the provider's instructions.")

    bare = words("bare.test")
    assert bare["DMARC"] == ("fail", "missing — Gmail and Outlook reject bulk mail without it. Add a TXT record at "
                                     "_dmarc.bare.test such as v=DMARC1; p=none; rua=mailto:dmarc@bare.test")
    assert bare["SPF"][0] == "fail" and bare["SPF"][1].startswith("missing — Gmail and Outlook reject")
    assert bare["DKIM"][0] == "fail" and bare["DKIM"][1].startswith("missing — no key at s1._domainkey.bare.test.")

    bad = words("bad.test")
    assert bad["SPF"] == ("fail", "2 SPF records on bad.test; receivers treat more than one as an error "
                                  "(permerror). Merge them into one TXT record.")
    assert bad["DKIM"][1].startswith("the record at s1._domainkey.bad.test has an empty p= (the key was revoked)")
    assert bad["DMARC"][1].startswith("the record at _dmarc.bad.test has p=maybe; it needs p=none")

    # SERVFAIL is "could not check", never a failure; neither is a mailbox with no DKIM selector.
    servfail = domain_auth_lookup(domain="servfail.test", selector="s1", smtp_host="")
    assert servfail.verdict == Verdict.UNKNOWN
    assert all(c.words.startswith("could not check — the DNS lookup of ") for c in servfail.checks)
    assert words("good.test", selector="")["DKIM"][0] == "unknown"
    assert ("_dmarc.good.test", "TXT") in dns_server.queries


def test_spf_syntax_and_its_all_term_are_read():
    found = lambda *texts: Lookup(Answer.FOUND, texts)  # noqa: E731
    assert spf_check("x.test", found("v=spf1 ip4:192.0.2.1 +all")).verdict == Verdict.FAIL
    broken = spf_check("x.test", found("v=spf1 include _spf.google.com ~all"))
    assert broken.verdict == Verdict.FAIL and "_spf.google.com" in broken.words
    assert "ends in -all" in spf_check("x.test", found("v=spf1 mx -all")).words
    assert spf_check("x.test", found("v=spf10 -all")).words.startswith("missing")
    timeout = Lookup(Answer.UNAVAILABLE, detail="no answer in time")
    assert dmarc_check("x.test", timeout).verdict == Verdict.UNKNOWN


@pytest.mark.django_db(transaction=True)
def test_a_failing_domain_pauses_the_mailbox_after_the_grace_period_and_a_fixed_one_clears_it(dns_server, settings):
    settings.OUTREACH_DOMAIN_AUTH_GRACE_HOURS = 72
    mailbox = MailboxFactory(address="sales@bare.test", dkim_selector="s1")
    unreachable = MailboxFactory(address="sales@servfail.test", dkim_selector="s1")

    assert domain_auth_sweep()["checked"] == 2
    mailbox.refresh_from_db()
    unreachable.refresh_from_db()
    assert mailbox.auth_verdict == "fail" and mailbox.auth_failing_since is not None and not mailbox.paused
    assert "DMARC: missing — Gmail and Outlook reject bulk mail without it." in mailbox.auth_summary
    assert (unreachable.auth_verdict, unreachable.auth_failing_since) == ("unknown", None)
    assert domain_auth_due() == [], "checked: the next look is an hour away for a failing one, a day otherwise"

    # 71 hours later: still within the grace period.
    Mailbox.objects.filter(pk=mailbox.pk).update(auth_failing_since=db_now() - timedelta(hours=71),
                                                 auth_checked_at=db_now() - timedelta(hours=2))
    assert domain_auth_sweep() == {"checked": 1, "failing": 1, "could_not_check": 0, "paused": 0}
    # 73 hours: the guardrail pauses it, with the failing records in words.
    Mailbox.objects.filter(pk=mailbox.pk).update(auth_failing_since=db_now() - timedelta(hours=73),
                                                 auth_checked_at=db_now() - timedelta(hours=2))
    assert domain_auth_sweep()["paused"] == 1
    mailbox.refresh_from_db()
    assert mailbox.paused and mailbox.guardrail_paused_at is not None
    assert mailbox.guardrail_reason.startswith(
        "domain authentication of bare.test has failed for 73 hours (more than the 72 allowed): SPF: missing")
    assert "DMARC: missing" in mailbox.guardrail_reason
    event = TimelineEvent.objects.get(kind=Event.MAILBOX_PAUSED_BY_GUARDRAIL)
    assert event.data["domain"] == "bare.test"
    assert OperatorAction.objects.get(action="mailbox_paused_by_guardrail").result["reason"] == mailbox.guardrail_reason
    # "Could not check" never counted: the unreachable one is neither failing nor paused.
    Mailbox.objects.filter(pk=unreachable.pk).update(auth_checked_at=db_now() - timedelta(days=2))
    domain_auth_sweep()
    unreachable.refresh_from_db()
    assert not unreachable.paused and unreachable.auth_failing_since is None

    # The records fixed (here: the mailbox moves to a domain that has them): the failing state clears; the
    # pause stays until an operator resumes, as after any guardrail pause.
    Mailbox.objects.filter(pk=mailbox.pk).update(address="sales@good.test")
    report = mailbox_domain_auth_check(mailbox_id=mailbox.pk)
    mailbox.refresh_from_db()
    assert report.verdict == Verdict.PASS
    assert (mailbox.auth_verdict, mailbox.auth_failing_since, mailbox.paused) == ("pass", None, True)
    assert TimelineEvent.objects.filter(kind=Event.MAILBOX_DOMAIN_AUTH_PASSING).count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_connection_check_and_the_mailboxes_page_show_the_domain(dns_server, smtp_server, django_user_model):
    mailbox = MailboxFactory(smtp_port=smtp_server.port, address="sales@bare.test", dkim_selector="s1")
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(admin)
    page = submit(client, reverse("mailbox_check", args=[mailbox.pk]), {}).content.decode()  # a worker checks
    assert "DNS DMARC: missing — Gmail and Outlook reject bulk mail without it." in page
    mailbox.refresh_from_db()
    assert mailbox.auth_failing_since is not None
    assert (f'<div class="small" id="domain-auth-{mailbox.name}">Domain authentication: failing since '
            f'{mailbox.auth_failing_since:%Y-%m-%d %H:%M} UTC<br><span class="muted">SPF: missing') in page

    call_command("mailbox_check", mailbox.name, stdout=(out := io.StringIO()))
    assert "WARN DNS            SPF: missing" in out.getvalue()


def test_the_dkim_selector_and_the_refusal_limits_are_toml_keys_and_exported(db):
    config_apply(parse("""
[[mailbox]]
name = "sales"
address = "sales@good.test"
dkim_selector = "s1"

[mailbox.guardrail]
refusal_rate = 5
refusal_min_sends = 10
"""))
    mailbox = Mailbox.objects.get(name="sales")
    assert (mailbox.dkim_selector, mailbox.guardrail_refusal_rate, mailbox.guardrail_refusal_min_sends) == ("s1", 5, 10)
    exported = sequence_export_toml(make_sequence(mailbox=mailbox, steps=1))
    assert 'dkim_selector = "s1"' in exported and "refusal_min_sends = 10" in exported
    with pytest.raises(ConfigError, match="dkim_selector"):
        parse('[[mailbox]]\nname = "x"\naddress = "x@good.test"\ndkim_selector = "bad selector"\n')


@pytest.mark.django_db(transaction=True)
def test_the_add_mailbox_check_shows_the_records_and_save_keeps_the_selector(dns_server, smtp_server,
                                                                              django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    data = {"preset": "other", "name": "sales", "address": "sales@bad.test", "auth": "password",
            "smtp_host": "127.0.0.1", "smtp_port": smtp_server.port, "smtp_security": "none", "imap_port": 143,
            "imap_security": "none", "daily_cap": 50, "window_timezone": "UTC", "dkim_selector": "s1",
            "follow_ups_without_reply_view": "on", "action": "check"}
    page = submit(client, "/mailboxes/new/", data).content.decode()
    assert "DKIM: the record at s1._domainkey.bad.test has an empty p= (the key was revoked)." in page
    submit(client, "/mailboxes/new/", {**data, "action": "save_anyway"})  # (the test server asks for no password)
    mailbox = Mailbox.objects.get(name="sales")
    assert (mailbox.dkim_selector, mailbox.auth_verdict) == ("s1", "fail")
    assert mailbox.auth_summary.startswith("SPF: 2 SPF records on bad.test;")
