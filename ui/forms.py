"""Operator UI forms: parse and validate input; the services decide."""

from __future__ import annotations

import csv
import io

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from mailboxes.models import Mailbox
from sequences.booking_token import booking_url_problem
from sequences.config.durations import DurationTooLong, parse_duration
from sequences.crossing import crossed_note_problem
from sequences.models import CROSSED_NOTE, CROSSED_NOTE_MAX, GIVEN_REASON_CHOICES, GIVEN_REASONS, Sequence, Suppression
from sequences.selectors import suppression_key
from sequences.services.suppressions import ImportRow
from sequences.spreadsheet import guard_formula, unformula  # noqa: F401 (ui.views takes guard_formula from here)

MAX_IMPORT_BYTES = 10 * 1024 * 1024
MAX_IMPORT_ROWS = 100_000
VALUE_COLUMNS = ("value", "email", "address", "domain")


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=400, label="Search")


def validate_suppression_value(raw: str) -> str:
    value, is_domain = suppression_key(raw)
    try:
        validate_email(("x" + value) if is_domain else value)
    except ValidationError:
        raise ValidationError(f"{raw.strip()!r} is neither an email address nor an @domain.") from None
    return value


class SuppressionAddForm(forms.Form):
    value = forms.CharField(max_length=320, label="Address or @domain",
                            help_text="e.g. jane@example.com, or @example.com for a whole domain")
    reason = forms.ChoiceField(choices=GIVEN_REASON_CHOICES, initial=Suppression.Reason.MANUAL)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)

    def clean_value(self) -> str:
        return validate_suppression_value(self.cleaned_data["value"])


class SuppressionLiftForm(forms.Form):
    value = forms.CharField(max_length=320, label="Address or @domain")
    note = forms.CharField(
        label="Justification", widget=forms.Textarea(attrs={"rows": 3}), max_length=2000,
        help_text="Required. Why may this address be contacted again? It stays in the ledger's history.",
        error_messages={"required": "A justification is required to lift a suppression."},
    )

    def clean_value(self) -> str:
        return validate_suppression_value(self.cleaned_data["value"])

    def clean_note(self) -> str:
        note = self.cleaned_data["note"].strip()
        if not note:
            raise ValidationError("A justification is required to lift a suppression.")
        return note


class SuppressionImportForm(forms.Form):
    file = forms.FileField(
        label="CSV file",
        help_text="UTF-8 CSV with a header row: value (or email/address/domain), and optional reason and note "
                  f"columns. Reasons: {', '.join(GIVEN_REASONS)}; empty means manual.",
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            raise ValidationError(f"The file is {upload.size:,} bytes; the limit is {MAX_IMPORT_BYTES:,}.")
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"The file is not UTF-8 (byte {exc.start}). Save it as CSV UTF-8.") from None
        self.rows, self.invalid = parse_suppression_csv(text)
        return upload


def parse_suppression_csv(text: str) -> tuple[list[ImportRow], list[dict]]:
    """Rows to import and per-row errors (line numbers as a spreadsheet shows them).

    A file whose header has no address column is refused as a whole.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header:
        raise ValidationError("The file is empty.")
    columns = [h.strip().lower() for h in header]
    value_col = next((columns.index(c) for c in VALUE_COLUMNS if c in columns), None)
    if value_col is None:
        raise ValidationError(
            f"The header row needs a column named one of: {', '.join(VALUE_COLUMNS)}. Found: {', '.join(header)}."
        )
    reason_col = columns.index("reason") if "reason" in columns else None
    note_col = columns.index("note") if "note" in columns else None
    rows: list[ImportRow] = []
    invalid: list[dict] = []
    seen: dict[str, int] = {}
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. a cell over the csv module's limit: the file, not one row, is unreadable
            raise ValidationError(f"Line {reader.line_num}: {exc}; nothing was imported.") from None
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        if len(rows) + len(invalid) >= MAX_IMPORT_ROWS:
            raise ValidationError(f"More than {MAX_IMPORT_ROWS:,} rows; split the file.")
        raw = unformula(cells[value_col].strip()) if value_col < len(cells) else ""
        reason = cells[reason_col].strip().lower() if reason_col is not None and reason_col < len(cells) else ""
        note = unformula(cells[note_col].strip()) if note_col is not None and note_col < len(cells) else ""
        reason = reason or Suppression.Reason.MANUAL
        error = ""
        if not raw:
            error = "empty address"
        else:
            try:
                value = validate_suppression_value(raw)
            except ValidationError as exc:
                error = exc.messages[0]
            else:
                if reason not in GIVEN_REASONS:
                    error = f"unknown reason {reason!r} (use {', '.join(GIVEN_REASONS)})"
                elif value in seen:
                    error = f"duplicate of line {seen[value]}"
                else:
                    seen[value] = line
        if error:
            invalid.append({"line": line, "value": raw[:320], "error": error})
        else:
            rows.append(ImportRow(line=line, value=raw, reason=reason, note=note))
    return rows, invalid


# --- the sequence editor ---------------------------------------------------------------------------------------


# The trade-off of Sequence.UnsubscribeStyle, in the words the operator reads where it is chosen.
UNSUBSCRIBE_STYLE_HELP = (
    "One-click headers (the default): mail apps show an “Unsubscribe” button beside the sender, and Gmail and "
    "Yahoo require this one-click unsubscribe of anyone who sends their users more than about 5,000 emails a day "
    "(their 2024 bulk-sender rules). But many automatic out-of-office replies are never sent to mail that carries "
    "these headers (Sieve “vacation”, used by Dovecot and other mail servers, treats it as list mail), so people "
    "on such a server who are away are not held: their follow-ups go out anyway. "
    "A plain line: no such headers; the same unsubscribe link is the last line of every email. Out-of-office "
    "replies then come back and hold the person until their return, but mail apps show no unsubscribe button "
    "(someone who wants out may press “Report spam” instead), and at Gmail or Yahoo volume the mail may be "
    "filtered or refused. Changing it applies to every email not yet prepared."
)


class SequenceForm(forms.Form):
    name = forms.CharField(max_length=200)
    mailbox = forms.ModelChoiceField(queryset=None, empty_label=None,
                                     help_text="The address every step of this sequence is sent from.")
    unsubscribe_style = forms.ChoiceField(choices=Sequence.UnsubscribeStyle.choices, required=False,
                                          initial=Sequence.UnsubscribeStyle.HEADERS, widget=forms.RadioSelect,
                                          label="How people unsubscribe", help_text=UNSUBSCRIBE_STYLE_HELP)
    booking_url = forms.CharField(
        required=False, max_length=500, label="Booking URL", widget=forms.URLInput(attrs={"size": 60}),
        help_text="Your Calendly or Cal.com scheduling page. A step links to it with {{ booking_link }}: the link "
                  "carries the person's token, so a booking there stops them in every sequence (set up the "
                  "booking webhook under Webhooks → Booking webhooks). Leave empty for none.")

    crossed_note = forms.CharField(
        required=False, max_length=CROSSED_NOTE_MAX, initial=CROSSED_NOTE,
        label="Note when a follow-up crossed a reply", widget=forms.Textarea(attrs={"rows": 3}),
        help_text="When a follow-up left while the person's reply was on its way, their conversation offers this "
                  "note: one click sends it from the mailbox that received the reply, threaded on it. Never sent "
                  "automatically. Your name is added as the signature. Left empty, it stays as it is.")

    def clean_crossed_note(self):
        text = self.cleaned_data["crossed_note"].strip()
        if text and (problem := crossed_note_problem(text)):
            raise forms.ValidationError(f"The note {problem}.")
        return text

    def clean_booking_url(self):
        url = self.cleaned_data["booking_url"].strip()
        if problem := booking_url_problem(url):
            raise forms.ValidationError(f"The booking URL {problem}.")
        return url

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["mailbox"].queryset = Mailbox.objects.order_by("name")
        self.fields["mailbox"].label_from_instance = lambda m: f"{m.name} <{m.address}>"


THREAD_HELP = ("Sent as a reply in the thread of the earlier steps (same subject with “Re:”, unless you give one). "
               "On by default for step 2 and later; step 1 always starts the thread.")


class StepForm(forms.Form):
    subject = forms.CharField(required=False, max_length=998, widget=forms.TextInput(attrs={"size": 60}),
                              help_text="Leave empty on a threaded follow-up to reply with “Re: ” and step 1's "
                                        "subject.")
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 12, "cols": 70}), strip=False,
                           help_text="Variables: {{ first_name }}, {{ last_name }}, {{ company }}, {{ email }} and "
                                     "the contact's own fields. A value a contact lacks stops its email unless you "
                                     "give a fallback: {{ company|default:\"your team\" }}.")
    wait = forms.CharField(max_length=60, initial="0", label="Wait before sending",
                           help_text="After the previous step was sent, e.g. “3 days”, “4 hours”, “90 minutes”; "
                                     "0 for step 1 sends it as soon as the sending window allows.")
    thread = forms.BooleanField(required=False, initial=True, label="Send as a reply in the same thread",
                                help_text=THREAD_HELP)

    def clean_wait(self) -> int:
        try:
            return parse_duration(self.cleaned_data["wait"])
        except DurationTooLong as exc:
            raise ValidationError(str(exc)) from None
        except ValueError:
            raise ValidationError("Write the wait as a number and a unit, e.g. “3 days”, “4 hours” or "
                                  "“90 minutes”.") from None


class PreviewForm(forms.Form):
    contact = forms.CharField(required=False, max_length=320, label="Preview for",
                              help_text="The address of a contact; the sequence's own contacts are suggested.")
