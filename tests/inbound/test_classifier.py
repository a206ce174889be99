"""inbound.classify on small synthetic fixtures written for this project.

The real corpus is scored by ``manage.py bench_classifier``; these tests pin
the behaviour each rule promises (RFC 3464 / 3463 / 5965 / 3834) and that
``classify`` never raises.
"""

from __future__ import annotations

import base64
import time
from email.message import EmailMessage
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbound.classify import Classification, classify
from inbound.classify.quotes import extract_reply_text
from inbound.kinds import (
    AUTH_FAILURE,
    AUTO_REPLY,
    BOUNCE,
    COMPLAINT,
    HARD,
    HUMAN_REPLY,
    SOFT,
    UNRELATED,
    UNSUBSCRIBE_REQUEST,
)

FIXTURES = Path(__file__).parent / "fixtures" / "classifier"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def mail(headers: str, body: str = "") -> bytes:
    return (headers.strip() + "\n\n" + body.lstrip("\n")).encode("utf-8")


# ---------------------------------------------------------------------------
# Bounces: RFC 3464 DSNs


def test_dsn_user_unknown_is_a_hard_bounce_for_the_final_recipient() -> None:
    result = classify(fixture("dsn_hard_5_1_1.eml"))

    assert result.kind == BOUNCE
    assert result.bounce_type == HARD
    assert result.recipients == ("ghost.prospect@acme.example",)  # lowercased
    assert result.recipient_types == (HARD,)
    assert result.status_codes == ("5.1.1",)
    assert "RFC 3464" in result.reason and "5.1.1" in result.reason


def test_dsn_original_message_id_comes_from_the_rfc822_headers_part() -> None:
    result = classify(fixture("dsn_hard_5_1_1.eml"))

    # The DSN's own Message-ID is not ours; the returned headers' one is.
    assert result.original_message_ids == ("<step1.enr42.7f3a@outreach.example>",)


def test_dsn_delayed_mailbox_full_4_2_2_is_soft() -> None:
    result = classify(fixture("dsn_soft_4_2_2_delayed.eml"))

    assert (result.kind, result.bounce_type) == (BOUNCE, SOFT)
    assert result.recipients == ("full.box@busy.example",)
    assert result.status_codes == ("4.2.2",)
    assert result.original_message_ids == ("<step2.enr7.91c0@outreach.example>",)


def test_dsn_mailbox_full_5_2_2_is_soft_despite_the_permanent_class() -> None:
    result = classify(fixture("dsn_soft_5_2_2_mailbox_full.eml"))

    assert (result.kind, result.bounce_type) == (BOUNCE, SOFT)
    assert result.recipients == ("over.quota@quota.example",)
    assert result.status_codes == ("5.2.2",)


def test_dsn_with_mixed_recipients_reports_each_and_is_soft_overall() -> None:
    result = classify(fixture("dsn_mixed_recipients.eml"))

    assert result.kind == BOUNCE
    assert dict(zip(result.recipients, result.recipient_types, strict=True)) == {
        "left.company@corp.example": HARD,
        "full@corp.example": SOFT,
    }
    # Hard overall only when every failed recipient is hard.
    assert result.bounce_type == SOFT


def test_successful_delivery_report_is_not_a_bounce() -> None:
    result = classify(fixture("dsn_delivered.eml"))

    assert result.kind == UNRELATED
    assert result.bounce_type == ""


@pytest.mark.parametrize(
    ("status", "diagnostic", "expected"),
    [
        ("5.1.1", "550 5.1.1 User unknown", HARD),
        ("5.1.2", "550 5.1.2 Host unknown", HARD),
        ("5.1.6", "551 5.1.6 Recipient has moved", HARD),
        ("5.4.4", "550 5.4.4 Invalid domain", HARD),
        ("5.2.1", "550 5.2.1 The email account that you tried to reach is disabled", SOFT),  # can be switched back on
        ("5.0.0", "550 Requested action not taken: mailbox unavailable", HARD),
        ("5.2.2", "552 5.2.2 Mailbox full", SOFT),
        ("5.1.1", "550 5.1.1 Mailbox is full, try again later", SOFT),  # text beats a wrong code
        ("5.3.4", "552 5.3.4 Message too big for system", SOFT),
        ("5.7.1", "550 5.7.1 Message rejected as spam by Content Filtering", SOFT),
        ("5.7.1", "554 5.7.1 Service unavailable; Client host blocked using zen.spamhaus.org", SOFT),
        ("4.4.7", "Delivery time expired", SOFT),
        ("5.1.8", "553 5.1.8 Sender address rejected: Domain not found", SOFT),  # about us
        ("5.0.0", "550 Administrative prohibition", SOFT),
        ("5.0.0", "", SOFT),  # unexplained permanent failure: not enough to suppress
    ],
)
def test_hard_or_soft_follows_rfc_3463_and_the_stated_reason(status: str, diagnostic: str, expected: str) -> None:
    raw = mail(
        """
From: MAILER-DAEMON@mx.sender.example
To: bounces@outreach.example
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="b"
""",
        f"""
--b
Content-Type: text/plain

Your message could not be delivered.

--b
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.sender.example

Final-Recipient: rfc822; someone@dest.example
Action: failed
Status: {status}
Diagnostic-Code: smtp; {diagnostic}

--b--
""",
    )
    result = classify(raw)

    assert result.kind == BOUNCE
    assert result.bounce_type == expected, result.reason


def test_user_unknown_answered_to_end_of_data_is_soft() -> None:
    # RFC 5321: addresses are judged at RCPT TO; a refusal after the content
    # was sent is a filter decision, whatever it says.
    raw = mail(
        """
From: MAILER-DAEMON@mx.sender.example (Mail Delivery System)
To: bounces@outreach.example
Subject: Undelivered Mail Returned to Sender
""",
        """
This is the mail system at host mx.sender.example.

<someone@carrier.example>: host mx.carrier.example[192.0.2.9] said: 550 Unknown
    user someone@carrier.example (in reply to end of DATA command)
""",
    )
    result = classify(raw)

    assert (result.kind, result.bounce_type) == (BOUNCE, SOFT)
    assert result.recipients == ("someone@carrier.example",)


def test_pipelined_rcpt_rejection_logged_after_data_is_still_hard() -> None:
    # With PIPELINING, Sendmail logs the RCPT reply after ">>> DATA"; the DATA
    # reply "no valid recipients" shows where the refusal happened.
    raw = mail(
        """
From: Mail Delivery Subsystem <MAILER-DAEMON@mx.sender.example>
To: bounces@outreach.example
Subject: Returned mail: see transcript for details
""",
        """
   ----- The following addresses had permanent fatal errors -----
<gone@dest.example>
    (reason: 550 5.1.1 <gone@dest.example>: User unknown)

   ----- Transcript of session follows -----
... while talking to mx.dest.example.:
>>> DATA
<<< 550 5.1.1 <gone@dest.example>: User unknown
550 5.1.1 <gone@dest.example>... User unknown
<<< 554 5.5.1 Error: no valid recipients
""",
    )
    result = classify(raw)

    assert (result.kind, result.bounce_type) == (BOUNCE, HARD)
    assert result.recipients == ("gone@dest.example",)


def test_report_with_a_broken_boundary_is_still_read() -> None:
    # The declared boundary never occurs; the body's own delimiter is used.
    raw = fixture("dsn_hard_5_1_1.eml").replace(b'boundary="B0UND.1"', b'boundary="SOMETHING-ELSE"')
    result = classify(raw)

    assert (result.kind, result.bounce_type) == (BOUNCE, HARD)
    assert result.recipients == ("ghost.prospect@acme.example",)


# ---------------------------------------------------------------------------
# Bounces: prose from MTAs that send no DSN


def test_qmail_prose_bounce() -> None:
    result = classify(fixture("qmail_prose.eml"))

    assert (result.kind, result.bounce_type) == (BOUNCE, HARD)
    assert result.recipients == ("nobody.here@oldco.example",)
    assert result.status_codes == ("5.1.1",)
    # The original's Message-ID is read from the inline copy after the marker.
    assert result.original_message_ids == ("<step1.enr99.5d5d@outreach.example>",)


def test_exim_prose_bounce_uses_x_failed_recipients() -> None:
    result = classify(fixture("exim_prose.eml"))

    assert (result.kind, result.bounce_type) == (BOUNCE, HARD)  # 5.1.6 has moved
    assert result.recipients == ("moved.away@hoster.example",)
    assert result.original_message_ids == ("<step3.enr5.e1e1@outreach.example>",)


def test_exim_mailbox_full_prose_is_soft() -> None:
    raw = mail(
        """
From: Mail Delivery System <Mailer-Daemon@mx.hoster.example>
To: bounces@outreach.example
Subject: Mail delivery failed: returning message to sender
X-Failed-Recipients: stuffed@hoster.example
""",
        """
This message was created automatically by mail delivery software.

A message that you sent could not be delivered to one or more of its
recipients. This is a permanent error. The following address(es) failed:

  stuffed@hoster.example
    mailbox is full: retry timeout exceeded
""",
    )
    result = classify(raw)

    assert (result.kind, result.bounce_type, result.recipients) == (BOUNCE, SOFT, ("stuffed@hoster.example",))


def test_prose_bounce_without_from_header_does_not_crash() -> None:
    # flufl.bounce raises on a message without From:; the fallback must not.
    raw = mail(
        """
To: bounces@outreach.example
Subject: failure notice
Return-Path: <>
""",
        """
Hi. This is the qmail-send program at mail.example.net.
I'm afraid I wasn't able to deliver your message to the following addresses.

<lost@dest.example>:
Sorry, no mailbox here by that name. (#5.1.1)
""",
    )
    result = classify(raw)

    assert (result.kind, result.bounce_type, result.recipients) == (BOUNCE, HARD, ("lost@dest.example",))


def test_amazon_ses_bounce_notification() -> None:
    raw = mail(
        """
From: AWS Notifications <no-reply@sns.amazonaws.com>
To: ops@outreach.example
Subject: AWS Notification Message
""",
        '{"notificationType":"Bounce","bounce":{"bounceType":"Permanent","bouncedRecipients":'
        '[{"emailAddress":"Nobody@Dest.example","action":"failed","status":"5.1.1",'
        '"diagnosticCode":"smtp; 550 5.1.1 user unknown"}]},"mail":{"headers":'
        '[{"name":"Message-ID","value":"<step1.enr77.aaaa@outreach.example>"}]}}\n',
    )
    result = classify(raw)

    assert (result.kind, result.bounce_type, result.recipients) == (BOUNCE, HARD, ("nobody@dest.example",))
    assert result.original_message_ids == ("<step1.enr77.aaaa@outreach.example>",)


# ---------------------------------------------------------------------------
# Complaints


def test_arf_complaint_names_the_original_rcpt_to() -> None:
    result = classify(fixture("arf_complaint.eml"))

    assert result.kind == COMPLAINT
    assert result.recipients == ("annoyed.person@isp.example",)
    assert result.original_message_ids == ("<step1.enr3.c0c0@outreach.example>",)
    assert "Feedback-Type: abuse" in result.reason


def test_arf_auth_failure_report_is_its_own_kind_not_a_complaint() -> None:
    # RFC 6591 authentication-failure reports use ARF but nobody complained.
    raw = fixture("arf_complaint.eml").replace(b"Feedback-Type: abuse", b"Feedback-Type: auth-failure")
    result = classify(raw)

    assert (result.kind, result.rule) == (AUTH_FAILURE, "arf_auth_failure")
    assert result.recipients == ("annoyed.person@isp.example",)


def test_hotmail_non_arf_complaint() -> None:
    result = classify(fixture("hotmail_jmrp.eml"))

    assert result.kind == COMPLAINT
    assert result.recipients == ("clicker@hotmail.example",)
    assert result.original_message_ids == ("<step1.enr8.abcd@outreach.example>",)


# ---------------------------------------------------------------------------
# Auto-replies


def test_rfc3834_auto_submitted_is_an_auto_reply() -> None:
    result = classify(fixture("rfc3834_autoreply.eml"))

    assert result.kind == AUTO_REPLY
    assert "RFC 3834" in result.reason
    assert result.original_message_ids == ("<step1.enr11.0a0a@outreach.example>",)


@pytest.mark.parametrize("name", ["ooo_german.eml", "ooo_french.eml"])
def test_out_of_office_subject_in_german_and_french(name: str) -> None:
    result = classify(fixture(name))

    assert result.kind == AUTO_REPLY
    assert "out-of-office" in result.reason


def test_challenge_response_is_an_auto_reply() -> None:
    raw = mail(
        """
From: noreply@challenge.example
To: dana@outreach.example
Subject: Please verify your message
""",
        """
I'm protecting my inbox. Please click on the following link to verify
you are a human and your message will be delivered:
https://challenge.example/verify/123
""",
    )

    assert classify(raw).kind == AUTO_REPLY


def test_exchange_suppress_header_alone_is_not_an_auto_reply() -> None:
    # X-Auto-Response-Suppress asks *others* not to auto-reply; Exchange adds
    # it to mail people write. Treating it as automatic would lose replies.
    raw = mail(
        """
From: Robin Buyer <robin@corp.example>
To: dana@outreach.example
Subject: RE: Quick question
In-Reply-To: <step1.enr5.cafe@outreach.example>
X-Auto-Response-Suppress: All
""",
        "Yes, let's talk on Tuesday.\n",
    )

    assert classify(raw).kind == HUMAN_REPLY


# ---------------------------------------------------------------------------
# Human replies, unsubscribe requests, unrelated mail


def test_human_reply_text_excludes_the_gmail_quote() -> None:
    result = classify(fixture("human_gmail_quote.eml"))

    # "unsubscribe" appears only in the quoted history: not a request.
    assert result.kind == HUMAN_REPLY
    assert result.reply_text == "Sounds interesting, can you send pricing?\n\nSam"
    assert result.original_message_ids == (
        "<step1.enr21.f00d@outreach.example>",
        "<step0.enr21.f00d@outreach.example>",
    )


def test_unsubscribe_request_in_the_new_text() -> None:
    result = classify(fixture("unsubscribe_reply.eml"))

    assert result.kind == UNSUBSCRIBE_REQUEST
    assert result.reply_text == "Not interested. Please remove me from your list."
    assert result.original_message_ids == ("<step2.enr30.beef@outreach.example>",)


@pytest.mark.parametrize(
    ("subject", "body", "expected"),
    [
        ("Unsubscribe", "", UNSUBSCRIBE_REQUEST),
        ("Re: Quick question", "Bitte austragen.", UNSUBSCRIBE_REQUEST),
        ("Re: Quick question", "Merci de me désinscrire de votre liste.", UNSUBSCRIBE_REQUEST),
        ("Re: Stop losing leads", "Interesting - how much is it?", HUMAN_REPLY),
        ("Re: Quick question", "Is there room on the guest list for two?", HUMAN_REPLY),
        ("Re: Absence management software", "Send me a demo link.", HUMAN_REPLY),
    ],
)
def test_unsubscribe_needs_a_clear_request(subject: str, body: str, expected: str) -> None:
    raw = mail(
        f"""
From: Kim Lead <kim@lead.example>
To: dana@outreach.example
Subject: {subject}
In-Reply-To: <step1.enr9.d00d@outreach.example>
""",
        body,
    )

    assert classify(raw).kind == expected


def test_newsletter_is_unrelated() -> None:
    raw = mail(
        """
From: Weekly Digest <digest@news.example>
To: dana@outreach.example
Subject: This week in sales
List-Unsubscribe: <https://news.example/u/123>
Precedence: bulk
""",
        "Top stories this week...\n",
    )

    assert classify(raw).kind == UNRELATED


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "Works for me.\n\n-----Original Message-----\nFrom: Dana\nSent: Monday\nSubject: Hi\n\nOld text\n",
            "Works for me.",
        ),
        (
            "Works for me.\n\nFrom: Dana Seller <dana@outreach.example>\nSent: Monday, March 2, 2026 10:00\n"
            "To: Kim <kim@lead.example>\nSubject: Hi\n\nOld text\n",
            "Works for me.",
        ),
        (
            "Passt.\n\nAm 02.03.2026 um 10:00 schrieb Dana Seller <dana@outreach.example>:\n> Alter Text\n",
            "Passt.",
        ),
        (
            "Sure.\n\nOn Mar 2, 2026, at 10:00, Dana Seller <dana@outreach.example> wrote:\n\n> Old text\n",
            "Sure.",
        ),
        ("On Monday, Dana wrote:\n> Old text\n> more\n\nMy answer below the quote.\n", "My answer below the quote."),
    ],
)
def test_extract_reply_text_client_styles(body: str, expected: str) -> None:
    assert extract_reply_text(body) == expected


# ---------------------------------------------------------------------------
# Robustness: classify never raises


def test_broken_mime_bad_charset_and_bad_base64_do_not_crash() -> None:
    result = classify(fixture("broken_mime.eml"))

    assert isinstance(result, Classification)
    assert result.kind == HUMAN_REPLY
    assert "\x00" not in result.reply_text  # safe to store


def _nested(depth: int) -> bytes:
    head = b"From: a@example.org\nContent-Type: multipart/mixed; boundary=b0\n\n"
    body = b"".join(b"--b%d\nContent-Type: multipart/mixed; boundary=b%d\n\n" % (i, i + 1) for i in range(depth))
    return head + body + b"--b%d\nContent-Type: text/plain\n\nhi\n" % depth


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00" * 64,
        b"\xff\xfe\xfa garbage \x80\x81",
        b"Subject: only headers\n",
        b"no headers at all, just a line: with a colon\n",
        b'From: <>\nTo:\nSubject: =?utf-8?B?broken\nContent-Type: text/plain; charset="\n\nbody\n',
        b"Content-Type: multipart/report; report-type=delivery-status\n\nno boundary at all\n",
        b"Content-Type: message/delivery-status\n\nFinal-Recipient: ;\nAction: failed\nStatus: 9.9.9\n",
        b"Content-Type: text/plain; charset=utf-7\n\n+AGEAYgBj-\n",
        _nested(300),
    ],
)
def test_hostile_input_never_raises(raw: bytes) -> None:
    result = classify(raw)

    assert isinstance(result, Classification)
    assert not result.reason.startswith("internal error"), result.reason


def test_str_input_is_accepted() -> None:
    assert classify("From: a@example.org\nSubject: hi\n\nHello").kind == HUMAN_REPLY  # type: ignore[arg-type]


def test_huge_message_is_classified_quickly() -> None:
    attachment = base64.encodebytes(b"\x00\x01binary" * 800_000)  # ~7 MB encoded
    text = "Thanks, sounds good.\n" + "> quoted line of an old thread\n" * 100_000
    raw = mail(
        """
From: Big Sender <big@lead.example>
To: dana@outreach.example
Subject: Re: Quick question
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="big"
""",
        f"""
--big
Content-Type: text/plain; charset=utf-8

{text}
--big
Content-Type: application/octet-stream
Content-Disposition: attachment; filename="blob.bin"
Content-Transfer-Encoding: base64

{attachment.decode()}
--big--
""",
    )
    started = time.perf_counter()
    result = classify(raw)
    elapsed = time.perf_counter() - started

    assert result.kind == HUMAN_REPLY
    assert result.reply_text == "Thanks, sounds good."
    assert elapsed < 15, f"took {elapsed:.1f}s"


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4000))
def test_classify_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    result = classify(raw)

    assert result.kind in {HUMAN_REPLY, AUTO_REPLY, BOUNCE, COMPLAINT, UNSUBSCRIBE_REQUEST, UNRELATED}


_FRAGMENTS = st.sampled_from(
    [
        "From: MAILER-DAEMON@x.example\n",
        "Content-Type: multipart/report; report-type=delivery-status; boundary=z\n",
        "Content-Type: multipart/report; report-type=feedback-report; boundary=z\n",
        "Content-Type: message/delivery-status\n",
        "Content-Type: message/feedback-report\n",
        "Content-Type: message/rfc822\n",
        "Content-Transfer-Encoding: base64\n",
        "Content-Type: text/plain; charset=bogus\n",
        "Auto-Submitted: auto-replied\n",
        "\n",
        "--z\n",
        "--z--\n",
        "Final-Recipient: rfc822; a@b.example\n",
        "Action: failed\n",
        "Status: 5.1.1\n",
        "Feedback-Type: abuse\n",
        "Original-Rcpt-To: <>\n",
        "Diagnostic-Code: smtp; 550 user unknown\n",
        "> quoted\n",
        "On Mon, Dana <d@x.example> wrote:\n",
        "=?utf-8?q?=E2=82?=\n",
    ]
)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_FRAGMENTS, max_size=40))
def test_classify_never_raises_on_mime_shaped_noise(fragments: list[str]) -> None:
    result = classify("".join(fragments).encode())

    assert not result.reason.startswith("internal error"), result.reason


def test_lowered_patterns_refuse_an_uppercase_literal() -> None:
    import re

    from inbound.classify.evidence import on_lowered as _on_lowered

    with pytest.raises(ValueError):
        _on_lowered(re.compile(r"Delivery failed", re.I))
    lowered = _on_lowered(re.compile(r"user ?unknown|\S+@\S+ does not exist", re.I))
    assert lowered.search("550 5.1.1 USER UNKNOWN".lower())
    assert lowered.search("Bob@Example.com DOES NOT EXIST".lower())
    assert not lowered.search("all is well")


def test_newsletter_full_of_delivery_words_but_no_bounce_signal_is_unrelated() -> None:
    """Reason wording alone ("user unknown", "has moved") in a list mail makes no bounce."""
    msg = EmailMessage()
    msg["From"] = "Digest <digest@news.example>"
    msg["To"] = "sales@ours.test"
    msg["Subject"] = "This week: the office has moved"
    msg["List-Unsubscribe"] = "<mailto:leave@news.example>"
    msg.set_content("Our office has moved. Unknown user stories inside.\n" * 200)
    assert classify(msg.as_bytes()).kind == UNRELATED


# ---------------------------------------------------------------------------
# Patterns that recur across senders: one fixture each


def test_pipelined_sendmail_dsn_status_5_1_1_outranks_the_after_data_transcript() -> None:
    # The RCPT reply printed after ">>> DATA", then "503 Need RCPT": the DSN's
    # own Status 5.1.1 names the address (RFC 3464 §2.3.4, RFC 3463 X.1.1).
    result = classify(fixture("sendmail_pipelining_5_1_1.eml"))

    assert (result.kind, result.bounce_type, result.rule) == (BOUNCE, HARD, "dsn")
    assert result.recipients == ("no.such.person@dest.example",)


def test_arf_opt_out_report_is_an_unsubscribe_request_for_the_removal_recipient() -> None:
    result = classify(fixture("opt_out_feedback.eml"))

    assert (result.kind, result.rule) == (UNSUBSCRIBE_REQUEST, "arf_opt_out")
    assert result.recipients == ("leaving.reader@isp.example",)
    assert result.original_message_ids == ("<step2.enr55.fb01@outreach.example>",)


def test_abuse_report_with_a_removal_recipient_stays_a_complaint() -> None:
    raw = fixture("opt_out_feedback.eml").replace(b"Feedback-Type: opt-out", b"Feedback-Type: abuse")
    result = classify(raw)

    assert (result.kind, result.recipients) == (COMPLAINT, ("leaving.reader@isp.example",))


def test_mail_client_one_click_unsubscribe_is_not_an_auto_reply() -> None:
    result = classify(fixture("mail_client_unsubscribe.eml"))

    assert (result.kind, result.rule) == (UNSUBSCRIBE_REQUEST, "client_unsubscribe")


def test_auto_submitted_newsletter_mentioning_unsubscribe_is_not_an_unsubscribe_request() -> None:
    raw = mail(
        """
From: News <news@vendor.example>
To: sales@outreach.example
Subject: This week's digest
Auto-Submitted: auto-generated
List-Id: <digest.vendor.example>
List-Unsubscribe: <mailto:unsubscribe@vendor.example>
""",
        "Top stories. You received this because you subscribed; to unsubscribe from this list, click here.\n",
    )

    assert classify(raw).kind != UNSUBSCRIBE_REQUEST


def test_rfc6591_auth_failure_report_names_recipient_and_message() -> None:
    result = classify(fixture("auth_failure_report.eml"))

    assert (result.kind, result.rule) == (AUTH_FAILURE, "arf_auth_failure")
    assert result.recipients == ("checked.reader@receiver.example",)
    assert result.original_message_ids == ("<step1.enr70.af01@outreach.example>",)


def test_ses_bounce_inside_an_sns_notification_is_a_bounce() -> None:
    # JSON inside JSON: SNS's "Message" field holds the SES event as a string.
    result = classify(fixture("ses_sns_wrapped_bounce.eml"))

    assert (result.kind, result.bounce_type, result.rule) == (BOUNCE, HARD, "ses_bounce")
    assert result.recipients == ("gone.person@dest.example",)
    assert result.status_codes == ("5.1.1",)
    assert result.original_message_ids == ("<step2.enr31.b0b0@outreach.example>",)


@pytest.mark.parametrize(
    ("status", "action", "diagnostic", "expected"),
    [
        # RFC 3463 X.2.1 / X.2.2: the mailbox exists; the code outranks the prose.
        ("5.2.1", "failed", "550 5.2.1 The email account that you tried to reach is disabled", SOFT),
        ("5.2.2", "failed", "552 5.2.2 Mailbox over quota (user unknown on backup)", SOFT),
        # ... unless the very reply carrying the code names a bad address.
        ("5.2.1", "failed", "550 5.2.1 <someone@dest.example>... User Unknown", HARD),
        # A 4.x.x under Action: failed: the MTA gave up, still a transient reason.
        ("4.4.7", "failed", "Delivery time expired", SOFT),
    ],
)
def test_status_code_first_prose_as_tie_breaker(status: str, action: str, diagnostic: str, expected: str) -> None:
    raw = mail(
        """
From: MAILER-DAEMON@mx.sender.example
To: bounces@outreach.example
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="b"
""",
        f"""
--b
Content-Type: text/plain

Your message could not be delivered.
    Sendmail adds: 550 5.1.1 <someone@dest.example>... User unknown

--b
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.sender.example

Final-Recipient: rfc822; someone@dest.example
Action: {action}
Status: {status}
Diagnostic-Code: smtp; {diagnostic}

--b--
""",
    )
    result = classify(raw)

    assert (result.kind, result.recipients) == (BOUNCE, ("someone@dest.example",))
    assert result.bounce_type == expected, result.reason


def test_delay_warning_without_a_dsn_part_is_a_soft_bounce_not_an_auto_reply() -> None:
    result = classify(fixture("delay_warning_no_dsn.eml"))

    assert (result.kind, result.bounce_type, result.rule) == (BOUNCE, SOFT, "bounce_prose_delay")
    assert result.recipients == ("slow.server@lagging.example",)


def test_encoded_word_local_part_is_decoded_not_cut() -> None:
    result = classify(fixture("encoded_local_part.eml"))

    assert (result.kind, result.bounce_type) == (BOUNCE, HARD)
    assert result.recipients == ("j.doe@dest.example",)


def test_encoded_word_local_part_that_is_not_a_plain_local_part_is_kept_whole() -> None:
    raw = fixture("encoded_local_part.eml").replace(b"ai5kb2U=", b"5pel5pys")  # decodes to non-ASCII
    result = classify(raw)

    assert result.recipients == ("=?utf-8?b?5pel5pys?=@dest.example",)


def test_every_classification_names_its_rule() -> None:
    for path in sorted(FIXTURES.glob("*.eml")):
        assert classify(path.read_bytes()).rule, path.name
