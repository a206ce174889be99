"""Preparation: render a job's step and build the MIME message. No transaction, no network.

Templates are plain text in a strict, small language (`ENGINE`): nothing is
HTML-escaped, only the tags and filters in `TAGS` and `FILTERS` exist, and a
variable that is undefined or empty is an error unless the template gives a
fallback (`{{ company|default:"your team" }}`). Every rendering runs within
a cost budget (`template_budget`: what it writes, the values it makes, its
loops, its time, and how deep its blocks nest). `step_validate` is the one
check every path that saves a step runs (TOML, admin, the editor, the API): it
renders the step for a worst-case contact, so a text that could pass the
budget is refused when it is saved; `message_prepare` raises `PrepareError`
with a reason an operator can read when a message cannot be built (a budget
passed included), and the pipeline ends the job with it.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from email import policy
from email.headerregistry import Address, HeaderRegistry
from email.message import EmailMessage
from email.utils import format_datetime
from urllib.parse import quote

from django.template import Context, Engine, Library, TemplateSyntaxError, defaultfilters, defaulttags
from django.template.base import Lexer, Node, TokenType, Variable, VariableDoesNotExist, VariableNode
from django.utils import timezone

from . import loads
from .booking_token import booking_context
from .models import Contact, SendJob, Sequence
from .sending_mailbox import enrollment_mailbox
from .template_budget import OverBudget, charged, instrument, joined_size, nesting_check, render_within
from .tokens import unsubscribe_url

# The whole template language of a step: control flow and text filters, and our `spin`. No include, load,
# extends, debug, ssi, url, csrf_token (nothing that reads files, other templates, settings or the request).
TAGS = ("if", "for", "with", "firstof", "comment", "now", "cycle", "spin")
FILTERS = (
    "default", "default_if_none", "upper", "lower", "title", "capfirst", "first", "last", "join", "length",
    "pluralize", "yesno", "truncatewords", "truncatechars", "cut", "date", "time", "add", "wordwrap", "slice",
    "stringformat", "floatformat", "ljust", "rjust", "center",
)
# A variable with one of these filters has its fallback in the template.
FALLBACKS = (defaultfilters.default, defaultfilters.default_if_none)

_library = Library()
_library.tags.update({name: defaulttags.register.tags[name] for name in TAGS if name != "spin"})
_library.filters.update({name: defaultfilters.register.filters[name] for name in FILTERS})

# Bounds of a filter's arguments, so that one filter cannot make a huge value: a width it pads or wraps to
# (SMTP's line), the digits a number is formatted with; and the length of a template itself. What a whole
# rendering may write, make, loop and take is its budget (template_budget: MAX_OUTPUT, MAX_ITERATIONS, ...).
MAX_WIDTH = 998
MAX_DIGITS = 30
MAX_TEMPLATE = 100_000

# Plain-text mail: no HTML autoescaping (the Context says so too: a Context autoescapes by default).
ENGINE = Engine(autoescape=False, debug=False, libraries={})
ENGINE.template_builtins = [_library]  # instead of Django's built-in tags and filters


class _HeaderClasses(HeaderRegistry):
    """The standard header registry, each header's class made once: the registry builds a new class with
    type() on every lookup, about half the time of building a message of ours (the classes keep no state)."""

    @functools.cache  # noqa: B019 (one registry for the life of the process)
    def __getitem__(self, name: str):
        return super().__getitem__(name)


HEADERS = _HeaderClasses()
# Long List-Unsubscribe URLs must not be folded into RFC 2047 encoded-words
# (mail clients would not find the URL); 998 is SMTP's own line limit.
MAX_LINE = 998  # SMTP's own line limit (RFC 5321)
POLICY = policy.SMTP.clone(max_line_length=MAX_LINE, header_factory=HEADERS)
# A recipient whose local part is not ASCII needs SMTPUTF8 (RFC 6531): UTF-8 headers, sent only where
# the server offers it (mailboxes.transports.smtp refuses before MAIL FROM otherwise).
POLICY_UTF8 = policy.SMTPUTF8.clone(max_line_length=MAX_LINE, header_factory=HEADERS)

# The variables every contact has; a contact's own fields add to them.
CONTACT_VARIABLES = ("first_name", "last_name", "company", "email", "fields")


class PrepareError(Exception):
    """A message that cannot be built from this step and contact; the text is the reason an operator reads."""


class MissingValue(PrepareError):
    """A variable without a fallback is undefined or empty for this contact; `name` names it."""

    def __init__(self, name: str):
        self.name = name
        super().__init__(f"missing value for {name}")


class TemplateFailed(PrepareError):
    """A template that compiles but cannot be rendered for these values (a filter's argument or input)."""


def _width(name: str, arg, low: int, high: int) -> int:
    try:
        width = int(arg)
    except (ValueError, TypeError):
        raise TemplateFailed(f"{name}: {str(arg)[:40]!r} is not a whole number") from None
    if not low <= width <= high:
        raise TemplateFailed(f"{name}: {str(arg)[:40]} is out of range ({low} to {high})")
    return width


def _bounded_width(name: str, low: int):
    """Django's NAME filter, its width argument checked first: 'ljust:"20000000"' would pad to 20 MB."""
    original = defaultfilters.register.filters[name]

    def bounded(value, arg):
        return original(value, _width(name, arg, low, MAX_WIDTH))

    return bounded


_FORMAT_NUMBERS = re.compile(r"\d+")


def _stringformat(value, arg):
    """stringformat, refusing widths and precisions over MAX_WIDTH ("%2000000000s" would allocate 2 GB)."""
    if any(int(n) > MAX_WIDTH for n in _FORMAT_NUMBERS.findall(str(arg)[:40])) or len(str(arg)) > 40:
        raise TemplateFailed(f"stringformat: {str(arg)[:40]!r} has a width or precision over {MAX_WIDTH}")
    return defaultfilters.stringformat(value, arg)


def _floatformat(value, arg=-1):
    """floatformat, refusing more than MAX_DIGITS decimals (Decimal would compute every one asked for)."""
    digits = str(arg).rstrip("gu")
    if digits and (len(digits) > 4 or (digits.lstrip("-").isdigit() and abs(int(digits)) > MAX_DIGITS)):
        raise TemplateFailed(f"floatformat: {str(arg)[:40]!r} asks for more than {MAX_DIGITS} decimals")
    return defaultfilters.floatformat(value, arg)


for _name, _low in (("ljust", 0), ("rjust", 0), ("center", 0), ("wordwrap", 1)):
    _library.filter(_name, _bounded_width(_name, _low))
_library.filter("stringformat", _stringformat)
_library.filter("floatformat", _floatformat)
# Every filter charges the values it makes to the rendering's budget; `join` is sized before it runs ("a|join:a"
# squares a's length). The fallbacks only pass on a value they were given (and are found by identity).
for _name, _filter in list(_library.filters.items()):
    if _filter not in FALLBACKS:
        _library.filters[_name] = charged(_filter, size_ahead=joined_size if _name == "join" else None)


# Spintax: `{% spin "Hi|Hello|Hey" %}` writes one of the options, the same one every time for the same person
# (seeded by the enrollment: a retry or a preview shows what was sent), and independently per spin of a template.
# The options are plain text (no variables inside), at most MAX_SPIN_OPTIONS of them.
SPIN_SEED = "__spin_seed"  # a context key no template can name (a variable may not start with "_")
MAX_SPIN_OPTIONS = 50


class _SpinNode(Node):
    def __init__(self, options: list[str], index: int):
        self.options, self.index = options, index

    def render(self, context):
        seed = context.get(SPIN_SEED, 0)
        # random.Random seeds a str through SHA-512: the same choice in every process (not Python's hash()).
        return random.Random(f"{seed}:{self.index}:{'|'.join(self.options)}").choice(self.options)


@_library.tag("spin")
def _spin(parser, token):
    bits = token.split_contents()
    if len(bits) != 2 or len(bits[1]) < 2 or bits[1][0] not in "\"'" or bits[1][-1] != bits[1][0]:
        raise TemplateSyntaxError('spin takes one quoted list of options: {% spin "Hi|Hello|Hey" %}')
    options = bits[1][1:-1].split("|")
    if len(options) < 2 or len(options) > MAX_SPIN_OPTIONS:
        raise TemplateSyntaxError(f"spin needs 2 to {MAX_SPIN_OPTIONS} options separated by |")
    index = parser.__dict__.get("outreach_spins", 0)  # the spins of one template are numbered in order
    parser.__dict__["outreach_spins"] = index + 1
    return _SpinNode(options, index)


class _StrictVariableNode(VariableNode):
    """`{{ name }}` that refuses an undefined or empty value unless a filter gives the fallback."""

    def render(self, context):
        if isinstance(context, _WorstCaseContext):  # a trial goes on past a lookup that finds nothing
            return super().render(context)
        expression = self.filter_expression
        var = expression.var
        has_fallback = any(func in FALLBACKS for func, _ in expression.filters)
        if isinstance(var, Variable) and var.lookups is not None and not has_fallback:
            try:
                value = var.resolve(context)
            except VariableDoesNotExist:
                raise MissingValue(var.var) from None
            if value is None or (isinstance(value, str) and not value.strip()):
                raise MissingValue(var.var)
        return super().render(context)


def compile_template(text: str):
    """Compile *text* in the strict language, to be rendered within a budget (`template_budget.render_within`);
    TemplateSyntaxError names what is wrong."""
    tokens = Lexer(text).tokenize()
    for token in tokens:
        if token.token_type == TokenType.TEXT:
            for opener, closer in (("{{", "}}"), ("{%", "%}"), ("{#", "#}")):
                if opener in token.contents:
                    raise TemplateSyntaxError(f"{opener} without its {closer}")
    nesting_check(tokens)
    try:
        template = ENGINE.from_string(text)
    except RecursionError:  # an expression the parser reads recursively: {% if not not … not x %}
        raise TemplateSyntaxError("an expression nested too deeply to be read") from None
    for node in template.nodelist.get_nodes_by_type(VariableNode):
        node.__class__ = _StrictVariableNode
    instrument(template)
    return template


@functools.lru_cache(maxsize=512)
def _compiled(text: str):
    """compile_template, once per text: a step's templates are rendered for every contact (a text that does
    not compile is not kept, and raises again)."""
    return compile_template(text)


def render(template: str, context: dict, *, seed: int = 0) -> str:
    """Render a step's text for one contact, as a plain str; MissingValue names an undefined or empty variable.
    `seed` (the enrollment's id) picks each `spin`'s option for this person.

    Django marks a template's output safe for HTML (a SafeString). A step's output is mail text holding
    whatever a contact's fields hold, so it is returned as a plain str: a page that shows it escapes it.
    """
    compiled = _compiled(template)  # TemplateSyntaxError: the template itself is wrong
    try:
        text = render_within(compiled, Context({**context, SPIN_SEED: seed}, autoescape=False))
    except PrepareError:
        raise
    except OverBudget as exc:
        raise TemplateFailed(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - rendering is pure (plain values in): a failure is the values' or a filter's
        raise TemplateFailed(_failure_words(exc)) from None
    return "".join(text)


def _failure_words(exc: Exception) -> str:
    """What a filter's failure says, for an operator: 'KeyError: 0' reads as a lookup that found nothing."""
    if isinstance(exc, KeyError | IndexError):
        return f"a filter or lookup found nothing at {str(exc)[:60]} ({type(exc).__name__})"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _plain(exc: TemplateSyntaxError) -> str:
    """Django's words for a tag outside the allow-list suggest loading it; say it is not allowed."""
    match = re.match(r"Invalid block tag on line (\d+): '([^']+)'", str(exc))
    if match and match.group(2) not in TAGS:
        return f"line {match.group(1)}: {{% {match.group(2)} %}} is not allowed (tags: {', '.join(TAGS)})"
    match = re.match(r"Invalid filter: '([^']+)'", str(exc))
    if match:
        return f"filter {match.group(1)!r} is not allowed (filters: {', '.join(FILTERS)})"
    return str(exc)


# "Re:" (and the like) at the start of a subject; a reply's subject is "Re: " + its thread's first subject.
REPLY_PREFIX = re.compile(r"^\s*(?:(?:re|aw|sv|fwd?)\s*(?:\[\d+\])?\s*:\s*)+", re.IGNORECASE)


def step_validate(*, subject: str, body: str, position: int, thread: bool | None = None) -> dict[str, list[str]]:
    """Every problem of a step's templates, by field ({} when it may be saved): TOML, admin, any later UI/API.

    `thread` (when the caller knows it): a step that is not sent as a reply may not fake one with "Re:".
    """
    errors: dict[str, list[str]] = {}
    if position == 1 and not subject.strip():
        errors.setdefault("subject", []).append("the first step needs a subject")
    if REPLY_PREFIX.match(subject) and (position == 1 or thread is False):
        errors.setdefault("subject", []).append(
            "starts with a reply prefix on a step that is not sent as a reply (never fake \"Re:\"); a threaded "
            "step with an empty subject is sent as \"Re: <its thread's subject>\"")
    for name, text in (("subject", subject), ("body", body)):
        if len(text) > MAX_TEMPLATE:
            errors.setdefault(name, []).append(f"is {len(text)} characters long: at most {MAX_TEMPLATE}")
            continue
        try:
            compile_template(text)
        except TemplateSyntaxError as exc:
            errors.setdefault(name, []).append(f"template error: {_plain(exc)}")
            continue
        if problem := _trial_problem(text):
            errors.setdefault(name, []).append(f"template error: {problem}")
    if "\n" in subject.strip() or "\r" in subject:
        errors.setdefault("subject", []).append("a subject is one line")
    return errors


# The worst-case contact a step is rendered for when it is saved: every value as long as a contact's may be
# (its columns' lengths; contact_rows.MAX_FIELDS fields of contact_rows.MAX_FIELD_VALUE characters, the bounds
# of every import: tests/security/test_template_budget.py holds these equal to them), in a letter that doubles
# when upper-cased. One string object, shared: the contact itself takes no memory.
WORST_FIELDS = 100
WORST_FIELD_VALUE = 10_000
_WORST = "ß" * WORST_FIELD_VALUE
_WORST_EMAIL = "x" * (254 - len("@example.com")) + "@example.com"


class _WorstCaseContext(Context):
    """The worst-case contact: every variable a template names has the longest value (a name that is no
    field of it too), so a trial rendering runs through every filter, at the largest sizes."""

    def __getitem__(self, key):
        try:
            return super().__getitem__(key)
        except KeyError:
            return _WORST


_FIELD_NAMES = re.compile(r"\bfields\.([A-Za-z_][A-Za-z0-9_]*)")


def _worst_case(text: str) -> dict:
    """The variables of the worst-case contact for TEXT: WORST_FIELDS `fields`, those TEXT names first."""
    names = dict.fromkeys([*_FIELD_NAMES.findall(text), *(f"field_{i}" for i in range(WORST_FIELDS))])
    columns = ("first_name", "last_name", "company")
    values = {name: _WORST[:Contact._meta.get_field(name).max_length] for name in columns}
    return {**values, "email": _WORST_EMAIL, "fields": dict.fromkeys(list(names)[:WORST_FIELDS], _WORST)}


def _trial_problem(text: str) -> str:
    """Why TEXT fails when rendered for the worst-case contact ('' when it renders): a filter that cannot take
    its argument or the value it is given (`wordwrap:"0"`, `fields|first`), or a rendering over its budget,
    is refused when the step is saved, not when it is sent."""
    try:
        render_within(_compiled(text), _WorstCaseContext(_worst_case(text), autoescape=False))
    except OverBudget as exc:
        return f"{exc} for a contact whose values are as long as allowed ({WORST_FIELD_VALUE:,} characters a field)"
    except TemplateFailed as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - as in render: a failure is a filter's, on these values
        return _failure_words(exc)
    return ""


def address_header(name: str, email: str) -> Address:
    """A To/From address with its domain in IDNA (punycode); PrepareError for what no header can carry."""
    if any(ch in name for ch in "\r\n\0"):
        raise PrepareError(f"invalid name {name!r}: contains a line break")
    local, sep, domain = email.rpartition("@")
    if not sep or not local or not domain or any(ch.isspace() or ch in '<>"\0' for ch in email):
        raise PrepareError(f"invalid address: {email!r}")
    try:
        ascii_domain = domain.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise PrepareError(f"invalid address: {email!r} (domain: {exc})") from None
    try:
        return Address(display_name=name, username=local, domain=ascii_domain)
    except (ValueError, TypeError) as exc:
        raise PrepareError(f"invalid address: {email!r} ({exc})") from None


def thread_of(job: SendJob) -> list[tuple[str, str]]:
    """(Message-ID, subject template) of each earlier message of ours in the thread this job answers, oldest first.

    Only messages that really left count: submitted or accepted, and not
    canceled at the provider before their send time. The thread starts at the
    latest of them that was not itself sent as a reply (step 1, or a step
    with thread = false); [] when nothing of ours was sent before this step.
    """
    sent = loads.sent_before(job)
    thread: list[tuple[str, str]] = []
    for message_id, subject, threaded, position in reversed(list(sent)):
        thread.insert(0, (message_id, subject))
        if position == 1 or not threaded:
            break
    return thread


def contact_context(contact, sequence: Sequence | None = None) -> dict:
    """The variables a step's templates see for one contact: its own fields, then the standard ones, then (given
    the sequence, when it has a booking URL) `booking_link`."""
    if not isinstance(contact.fields, dict):  # saved around the services (the admin's JSON, the table)
        raise PrepareError(f"the contact's fields are not a table of names and values "
                           f"(a JSON {type(contact.fields).__name__})")
    return {
        **{k: v for k, v in contact.fields.items() if k.isidentifier()},
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "company": contact.company,
        "email": contact.email,
        "fields": contact.fields,
        **booking_context(sequence, contact),
    }


@dataclass(frozen=True)
class PreparedMessage:
    job_id: int
    sender: str
    recipient: str
    message_id: str
    data: bytes


def step_texts(job: SendJob) -> tuple[str, str]:
    """The subject and body templates a job sends: its A/B variant's, or its step's own."""
    if job.variant_id is not None:
        return job.variant.subject, job.variant.body
    if not job.step.body.strip():
        raise PrepareError(f"step {job.step.position} has no text of its own and none of its A/B variants is "
                           "running: start or add a variant, then retry")
    return job.step.subject, job.step.body


# The sequence's unsubscribe style "line" (Sequence.UnsubscribeStyle.LINE): the one-click link on the last line
# of the text instead of in List-* headers. The link opens the same page as the header's (a confirm button).
UNSUBSCRIBE_LINE = "To unsubscribe: {url}"


def message_prepare(*, job_id: int, job: SendJob | None = None) -> PreparedMessage:
    """Render subject and body, thread it under earlier steps, offer the unsubscribe link (List-Unsubscribe
    headers, or a line at the end of the text: the sequence's `unsubscribe_style`); PrepareError says why not.

    `job`: the job as its claim read it, with its enrollment, contact, sequence, mailbox and step loaded
    (the pipeline passes it, so they are not read twice).
    """
    if job is None:
        job = loads.jobs_loaded().get(pk=job_id)
    contact = job.enrollment.contact
    mailbox = enrollment_mailbox(job.enrollment)
    context = contact_context(contact, job.enrollment.sequence)
    subject_text, body_text = step_texts(job)
    seed = job.enrollment_id
    thread = thread_of(job) if job.step.thread else []
    try:
        subject = _subject_line(subject_text, thread, context, seed=seed)
        body = render(body_text, context, seed=seed)
    except (TemplateSyntaxError, TemplateFailed) as exc:  # a template saved around the validation (straight into
        # the table), a filter failing on this contact's values, or a rendering over its budget: the job ends
        # with the reason, never a crash (nor a worker that runs out of memory and is brought back by the sweeper)
        raise PrepareError(f"template error in step {job.step.position}: {exc}") from None

    name = " ".join(p for p in (contact.first_name, contact.last_name) if p)
    to = address_header(name, contact.email)
    sender = address_header(mailbox.display_name, mailbox.address)
    headers: list[tuple[str, Address | str]] = [
        ("From", sender), ("To", to), ("Date", format_datetime(timezone.now())), ("Message-ID", job.message_id)]
    if thread:
        headers += [("In-Reply-To", thread[-1][0]), ("References", " ".join(mid for mid, _ in thread))]
    url = unsubscribe_url(job_id=job.pk, email=contact.email)
    headers.append(("Subject", subject))
    if job.enrollment.sequence.unsubscribe_style == Sequence.UnsubscribeStyle.LINE:
        # No List-* header: Sieve vacation (and other auto-responders that skip list mail) then answers.
        body = f"{body.rstrip()}\n\n{UNSUBSCRIBE_LINE.format(url=url)}\n"
    else:
        mailto = f"mailto:{sender.addr_spec}?subject={quote('unsubscribe')}"
        headers += [
            # RFC 2369 + RFC 8058 one-click: mail clients POST "List-Unsubscribe=One-Click" to the URL.
            ("List-Unsubscribe", f"<{url}>, <{mailto}>"),
            ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
        ]
    headers.append(("X-Outreach-Job", str(job.pk)))
    return PreparedMessage(job_id=job.pk, sender=sender.addr_spec, recipient=to.addr_spec,
                           message_id=job.message_id, data=message_bytes(headers, body, email=contact.email))


def _subject_line(subject_text: str, thread: list[tuple[str, str]], context: dict, *, seed: int) -> str:
    """The Subject header a job carries: its template rendered on one line; in a thread, "Re: <the thread's first
    subject>" when it has none of its own."""
    subject = " ".join(render(subject_text, context, seed=seed).split())
    if not thread:
        # Not a reply to anything of ours that left: a "Re:" in the step's own subject would fake one.
        return REPLY_PREFIX.sub("", subject)
    if subject:
        return subject
    first = " ".join(render(thread[0][1], context, seed=seed).split())
    return "Re: " + REPLY_PREFIX.sub("", first) if first else ""


def subject_sent(job: SendJob) -> str:
    """The Subject a job that left carried, written again as `message_prepare` wrote it: its variant's or step's
    subject for its contact, "Re: …" in a thread. The text of a message is not kept, so a step or contact edited
    since shows as it reads now; '' when it no longer renders. Reads the job's step, variant and contact."""
    try:
        subject_text, _ = step_texts(job)
        thread = thread_of(job) if job.step.thread else []
        context = contact_context(job.enrollment.contact, job.enrollment.sequence)
        return _subject_line(subject_text, thread, context, seed=job.enrollment_id)
    except (PrepareError, TemplateSyntaxError, TemplateFailed):
        return ""


def message_bytes(headers: list[tuple[str, Address | str]], body: str, *, email: str) -> bytes:
    """A plain-text message's bytes, the headers in the order given: written directly where the message is plain
    (`plain_message_bytes`), by the email package otherwise. PrepareError says what could not be written."""
    return plain_message_bytes(headers, body) or email_package_bytes(headers, body, email=email)


def email_package_bytes(headers: list[tuple[str, Address | str]], body: str, *, email: str) -> bytes:
    """The message as Python's email package writes it (SMTP policy, 998-character lines): every case.
    PrepareError says what could not be written (`email`: the contact's address, as the operator knows it)."""
    to = dict(headers)["To"]
    msg = EmailMessage(policy=POLICY if to.username.isascii() else POLICY_UTF8)
    for name, value in headers:
        try:
            msg[name] = value
        except (ValueError, TypeError, UnicodeError) as exc:
            if name in ("From", "To"):
                raise PrepareError(f"invalid address: {email!r} ({exc})") from None
            raise PrepareError(f"cannot build the message: {name}: {exc}") from None
    msg.set_content(body)
    try:
        return msg.as_bytes()
    except (ValueError, UnicodeError) as exc:
        raise PrepareError(f"cannot build the message: {exc}") from None


# What plain_message_bytes writes as it is: printable ASCII without an encoded-word opener, and a name of
# words of atext (RFC 5322) separated by single spaces (the email package quotes or encodes any other).
_ATEXT = r"A-Za-z0-9!#$%&'*+\-/=?^_`{|}~"
_PLAIN_NAME = re.compile(rf"[{_ATEXT}]+(?: [{_ATEXT}]+)*")
_PRINTABLE = re.compile(r"[ -~]*")
_CONTENT_HEADERS = (b'Content-Type: text/plain; charset="utf-8"\r\nContent-Transfer-Encoding: 7bit\r\n'
                    b"MIME-Version: 1.0\r\n")


def plain_message_bytes(headers: list[tuple[str, Address | str]], body: str) -> bytes | None:
    """The bytes `email_package_bytes` writes, for the common message: printable ASCII everywhere, no line to
    fold, names that need no quoting; None for any other (the email package then writes it).

    About a tenth of the email package's time: it parses every header it is given and folds it back, which
    a value already in its final form does not need. tests/sequences/test_message_bytes.py checks the two
    give the same bytes over generated messages, including those this declines.
    """
    lines = []
    for name, value in headers:
        if isinstance(value, Address):
            if value.display_name and not _PLAIN_NAME.fullmatch(value.display_name):
                return None
            text = f"{value.display_name} <{value.addr_spec}>" if value.display_name else value.addr_spec
        else:
            text = value
        line = f"{name}: {text}"
        if not text or len(line) > MAX_LINE or "=?" in text or not _PRINTABLE.fullmatch(text):
            return None
        lines.append(line)
    if not body or not body.isascii():
        return None
    body_lines = body.encode("ascii").splitlines()
    if max(len(line) for line in body_lines) > MAX_LINE:
        return None
    return ("\r\n".join(lines) + "\r\n").encode("ascii") + _CONTENT_HEADERS + b"\r\n" + b"".join(
        line + b"\r\n" for line in body_lines)
