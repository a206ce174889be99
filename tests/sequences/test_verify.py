"""Address verification before enrolling, against a local authoritative DNS server: a domain that does not exist
is refused with its line and reason (the command and the browser's dry run), a role account is flagged, an
unreachable resolver refuses nothing."""

from __future__ import annotations

import io

import django_rq
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from mailboxes.address_check import DomainCheck, Status, address_verify, rows_verify
from mailboxes.dns_lookup import resolver_from
from sequences.models import Enrollment
from tests.factories import MailboxFactory, make_sequence
from tests.ui.test_contacts import run_job

CSV = ("email,first_name,company\nann@good.test,Ann,Acme\nbob@nope.test,Bob,Acme\ninfo@bare.test,Team,Bare\n"
       "cid@servfail.test,Cid,Acme\n")


class Row:
    def __init__(self, line: int, email: str):
        self.line, self.email = line, email


def test_each_domain_is_looked_up_once_and_only_nxdomain_is_refused(dns_server):
    domains = DomainCheck()
    rows = [Row(2, "ann@good.test"), Row(3, "bob@nope.test"), Row(4, "info@bare.test"), Row(5, "eve@good.test"),
            Row(6, "x@nomail.test"), Row(7, "cid@servfail.test")]
    verified = rows_verify(rows, domains)
    assert [r.line for r in verified.kept] == [2, 4, 5, 7]
    assert verified.refused == [
        (3, "the domain nope.test does not exist (no such name in DNS)"),
        (6, "the domain nomail.test has no mail server (no MX, A or AAAA record)"),
    ]
    assert verified.flagged == [
        (4, "info@bare.test is a role account (a team's address, not a person's)"),
        (7, "could not verify servfail.test: the resolver failed to answer (SERVFAIL or refused)"),
    ]
    mx_queries = [q for q in dns_server.queries if q == ("good.test", "MX")]
    assert len(mx_queries) == 1 and verified.lookups == 5, "good.test was looked up once for two rows"


def test_an_unreachable_resolver_says_could_not_verify():
    domains = DomainCheck(using=resolver_from("127.0.0.1:9", timeout=0.3))
    verdict = address_verify("ann@good.test", domains)
    assert verdict == address_verify("bob@good.test", domains) and domains.lookups == 1
    assert (verdict.status, verdict.words) == (Status.UNVERIFIED, "could not verify good.test: no answer in time")


@pytest.fixture
def sequence(db):
    return make_sequence(mailbox=MailboxFactory(), steps=1)


def test_enroll_verify_refuses_the_nxdomain_row_with_its_line(dns_server, sequence, tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(CSV)
    out, err = io.StringIO(), io.StringIO()
    call_command("enroll", "--sequence", sequence.name, "--verify", str(path), stdout=out, stderr=err)
    assert "3 enrolled, 1 rejected, 0 already enrolled, 0 suppressed (4 rows)" in out.getvalue()
    assert err.getvalue() == "line 3: the domain nope.test does not exist (no such name in DNS)\n"
    assert "line 4: info@bare.test is a role account (a team's address, not a person's); not refused for " \
           "this" in out.getvalue()
    assert sorted(Enrollment.objects.filter(sequence=sequence).values_list("contact__email", flat=True)) == [
        "ann@good.test", "cid@servfail.test", "info@bare.test"]


def test_the_browser_dry_run_refuses_the_nxdomain_row(dns_server, sequence, django_user_model, redis_conn):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))
    upload = client.post(reverse("enroll_upload", args=[sequence.pk]),
                         {"file": SimpleUploadedFile("people.csv", CSV.encode(), content_type="text/csv")})
    mapping = {"col0": "email", "col1": "first_name", "col2": "company"}
    waiting = client.get(upload.url, {**mapping, "verify": "1"}).content.decode()
    assert "0 of 4 domains looked up" in waiting  # the lookups run in a background job
    (check,) = django_rq.get_queue("default").jobs
    run_job(check.id)
    page = client.get(upload.url, {**mapping, "verify": "1"}).content.decode()
    assert '<li id="n-valid"><strong>3</strong> rows will be enrolled (' in page  # with a note on some
    assert ('<td data-label="Line">3</td><td data-label="Reason" class="address">the domain nope.test does not exist '
            '(no such name in DNS)</td>') in page
    assert "Enrolled, but: info@bare.test is a role account" in page
    assert '<input type="hidden" name="verify" value="1">' in page
    unverified = client.get(upload.url, mapping).content.decode()
    assert '<li id="n-valid"><strong>4</strong> rows will be enrolled</li>' in unverified
