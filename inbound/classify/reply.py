"""5. Human replies and unsubscribe requests.

The wording that makes a reply an unsubscribe request, and what does not (negated requests, questions about
someone else, footers), is in stop_wording.py and optout.py: the replies inbox reads the same. Where no phrase
decides and no words of stopping were set aside by a rule (intent.PhraseReading.stop_words_set_aside:
"please don't remove me", "how do I unsubscribe my team from X?"), the learned model (learned/) is asked how
likely the reply asks to stop:

- sure (learned.OPTOUT_SURE): an unsubscribe request, as if a phrase had said it;
- unsure (from learned.OPTOUT_UNSURE): a human reply with the rule ``possible_optout``: it stops the sequence
  as every reply does, and ingestion suppresses the address provisionally, for an operator to confirm or lift
  (Replies → Needs review). Uncertainty may cost a follow-up, never send one to someone who asked to stop.

A source question the writer calls curiosity ("who gave you my address? just curious") is no data-protection
demand, but it is held the same way: rule ``possible_optout``, for an operator to decide.

A request to take "her" or "him" off, with no word of that person having left ("Ms. Grant receives a lot of
mail. Please remove her from your list"), is held the same way: an assistant may be writing for the person
written to.

A request the phrases read in a reply the model reads as something else (below learned.OPTOUT_DOUBT: "stop the
follow-ups, we're on for Monday at 11", "I clicked unsubscribe by mistake") is held the same way, never let
through: rule ``possible_optout``. A data-protection demand and a subject that asks to unsubscribe are never
doubted.

A reply whose own words only assent to the question of stopping in the mail it quotes ("Yes." under "Last try:
shall I stop reaching out?") is an unsubscribe request (stop_question.py).

A short note the person wrote that the model reads as an away note ("on holiday till the 18th", "off sick
this week") and no phrase reads as anything else is an auto-reply with the rule ``away_note``: it holds the
person until the stated date, as an out-of-office does.
"""

from __future__ import annotations

import re

from ..kinds import Kind
from . import learned
from .data_requests import curious_source_question, data_request
from .evidence import own_reply_ids
from .inbound import Inbound
from .intent import Category, model_reading, new_text, read_phrases
from .mime import header_of
from .result import Classification
from .stop_question import assent_to_stop
from .stop_wording import UNSUBSCRIBE_SUBJECT_RE, taken_off_by_pronoun, unsubscribe_phrase

# Mail clients' one-click unsubscribe (Apple Mail and others answer a
# List-Unsubscribe mailto: for the user, RFC 2369 / RFC 8058's intent) is
# machine-sent and marked Auto-Submitted, but it is the person's request.
_CLIENT_UNSUBSCRIBE_BODY_RE = re.compile(
    r"(generated|sent) (automatically )?(by|from) .{0,60}\bto unsubscribe\b"
    r"|\bto unsubscribe (you |this address )?from (this|the|a|your) (mailing )?list"
    r"|\bunsubscribe request\b|\brequest(ed)? to unsubscribe\b",
    re.I,
)
_LIST_HEADERS = {"list-unsubscribe", "list-unsubscribe-post", "list-id"}


def check_client_unsubscribe(mail: Inbound) -> Classification | None:
    """An unsubscribe mail a client sent on the person's behalf: before the auto-reply check claims it."""
    msg = mail.msg
    auto_submitted = header_of(msg, "Auto-Submitted").lower()
    if not auto_submitted or auto_submitted.startswith("no") or header_of(msg, "List-Id"):
        return None
    subject = header_of(msg, "Subject")
    names = {str(name).lower() for name in msg.keys()}
    unsubscribe_header = any("unsubscribe" in name for name in names - _LIST_HEADERS)
    if not (
        UNSUBSCRIBE_SUBJECT_RE.search(subject)
        or _CLIENT_UNSUBSCRIBE_BODY_RE.search(mail.reply_text[:3000])
        or (unsubscribe_header and "unsubscribe" in subject.lower())
    ):
        return None
    return Classification(
        kind=Kind.UNSUBSCRIBE_REQUEST,
        original_message_ids=tuple(own_reply_ids(msg)),
        reason=f"unsubscribe mail sent by the person's mail client (Auto-Submitted: {auto_submitted})",
        reply_text=mail.reply_text,
        rule="client_unsubscribe",
    )


def check_human(mail: Inbound) -> Classification:
    msg, text = mail.msg, mail.reply_text
    ids = tuple(own_reply_ids(msg))
    subject = header_of(msg, "Subject")
    rule = reason = ""
    body = new_text(text)
    if demand := demand_words(text, subject):
        # Read as an opt-out: the address is suppressed; the words say a legal deadline runs.
        rule, reason = DATA_REQUEST, f"data-protection request (erasure, access or objection): {demand!r}"
    elif UNSUBSCRIBE_SUBJECT_RE.search(subject):
        rule, reason = "unsubscribe_subject", f"subject asks to unsubscribe: {subject[:80]}"
    elif phrase := unsubscribe_phrase(text):
        rule, reason = "unsubscribe_text", f"reply asks to stop: {phrase!r}"
    elif assent := assent_to_stop(mail.whole_text, body):
        # never doubted by the model, which reads the answer without the question it answers
        rule, reason = "stop_question", f"reply says {assent!r} to the quoted question whether to stop writing"
    if rule == "unsubscribe_text" and (doubt := _model_doubts(body)) is not None:
        # The words read as a request, the whole reply as something else ("stop the follow-ups, we're on for
        # Monday at 11"): held back all the same, for an operator to decide.
        return Classification(
            kind=Kind.HUMAN_REPLY, original_message_ids=ids, reply_text=text, rule=POSSIBLE_OPTOUT,
            reason=(f"person's mail; {phrase!r} may ask to stop, though the model reads the reply otherwise (model "
                    f"{doubt:.0%}): suppressed until an operator confirms or lifts it"),
        )
    if reason:
        return Classification(
            kind=Kind.UNSUBSCRIBE_REQUEST, original_message_ids=ids, reason=reason, reply_text=text, rule=rule
        )
    kind, rule, reason = Kind.HUMAN_REPLY, HUMAN, "person's mail"
    phrases = read_phrases(body)
    if curious := curious_source_question(text):
        rule = POSSIBLE_OPTOUT
        reason = (f"person's mail; asks where we got the address, out of curiosity ({curious!r}): suppressed until "
                  "an operator confirms or lifts it")
    elif taken := taken_off_by_pronoun(body):
        rule = POSSIBLE_OPTOUT
        reason = (f"person's mail; asks to take someone off ({taken!r}), who may be the person written to: suppressed "
                  "until an operator confirms or lifts it")
    elif not phrases.stop_words_set_aside and (model := learned.predict(model_reading(body))) is not None:
        optout = model.of(Category.UNSUBSCRIBE)
        if optout >= learned.OPTOUT_SURE:
            kind, rule = Kind.UNSUBSCRIBE_REQUEST, MODEL_OPTOUT
            reason = f"reply reads as asking to stop (model {optout:.0%} sure)"
        elif optout >= learned.OPTOUT_UNSURE:
            rule = POSSIBLE_OPTOUT
            reason = (f"person's mail; may be asking to stop (model {optout:.0%}): suppressed until an operator "
                      "confirms or lifts it")
        elif model.category == Category.OUT_OF_OFFICE and model.probability >= learned.AWAY_SURE and (
            phrases.suggestion.category in (Category.OUT_OF_OFFICE, Category.OTHER)
        ):
            kind, rule = Kind.AUTO_REPLY, AWAY_NOTE
            reason = f"the person's own away note (model {model.probability:.0%} sure)"
    return Classification(kind=kind, original_message_ids=ids, reason=reason, reply_text=text, rule=rule)


def _model_doubts(body: str) -> float | None:
    """The model's probability that the reply asks to stop, when it is below learned.OPTOUT_DOUBT; else None."""
    model = learned.predict(model_reading(body))
    optout = model.of(Category.UNSUBSCRIBE) if model is not None else 1.0
    return optout if optout < learned.OPTOUT_DOUBT else None


def demand_words(text: str, subject: str) -> str:
    """The words of a data-protection demand in a person's new text or subject, or "" (rule DATA_REQUEST)."""
    return data_request(text) or data_request(subject)


HUMAN, MODEL_OPTOUT, POSSIBLE_OPTOUT, AWAY_NOTE = "human", "model_optout", "possible_optout", "away_note"
DATA_REQUEST = "data_request"

