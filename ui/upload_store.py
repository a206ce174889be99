"""Uploads kept for enrolling: each CSV waits in Redis under a token while its columns are mapped and its dry run
is read, within a quota per person and for everyone together (`KEPT`, one sorted set that a Redis transaction
reads and writes), and is forgotten after UPLOAD_TTL, once its run has started, or when its owner discards it.
The pages that use them are in `enroll_upload`.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import django_rq
from django.http import Http404
from django.template.defaultfilters import filesizeformat

# An upload not enrolled within six hours is forgotten: mapping and the dry run take minutes, and a short stay
# frees the quota sooner than a day would.
UPLOAD_TTL = 6 * 3600
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
# What uploads waiting to be enrolled may keep in Redis, counted as stored (the file's text as JSON):
USER_QUOTA_BYTES = 50 * 1024 * 1024  # each person's: two files of the largest size
TOTAL_QUOTA_BYTES = 200 * 1024 * 1024  # everyone's together, well below what the queues need to keep running
# The least an upload counts: bounds how many are kept (TOTAL / this), so reading them all stays cheap.
MIN_CHARGE_BYTES = 64 * 1024
KEPT = "outreach:enroll-uploads"  # sorted set: a JSON member per kept upload, scored by when Redis forgets it


def redis_queue():
    # The job carries its rows: nothing waits for a database commit.
    return django_rq.get_queue("default", commit_mode="auto")


def upload_key(token: str) -> str:
    return f"outreach:enroll-upload:{token}"


@dataclass
class Upload:
    sequence_id: int
    file: str
    header: list[str]
    text: str

    @classmethod
    def load(cls, token: str, sequence_id: int) -> Upload:
        raw = redis_queue().connection.get(upload_key(token)) if token.isalnum() else None
        if raw is None:
            raise Http404(f"This upload is no longer kept (uploads are kept for {hours_words(UPLOAD_TTL)}, until they "
                          "are enrolled or discarded); upload the file again.")
        upload = cls(**json.loads(raw))
        if upload.sequence_id != sequence_id:
            raise Http404("no such upload")
        return upload


# --- the quota of kept uploads ----------------------------------------------------------------------


def hours_words(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:g} hour{'s' if hours != 1 else ''}"


@dataclass(frozen=True)
class Kept:
    """An upload kept for enrolling, as its owner's quota and everyone's count it."""

    member: str  # its entry in KEPT
    token: str
    user: int
    sequence: int
    file: str
    bytes: int  # what it counts: its stored size, at least MIN_CHARGE_BYTES
    expires: float  # when Redis forgets it, in seconds since the epoch by Redis's own clock

    @property
    def expires_at(self) -> datetime:
        return datetime.fromtimestamp(self.expires, tz=UTC)


def _now(conn) -> float:
    """Redis's clock, the one its expiry follows, whichever web process asks."""
    seconds, micros = conn.time()
    return seconds + micros / 1_000_000


def _kept(conn, now: float) -> list[Kept]:
    """The uploads Redis still keeps, the first to be forgotten first."""
    return [
        Kept(member=member.decode(), expires=score, **json.loads(member))
        for member, score in conn.zrangebyscore(KEPT, f"({now}", "+inf", withscores=True)
    ]


def _room_at(kept: list[Kept], over: int) -> datetime | None:
    """When enough of `kept` (the first to be forgotten first) is forgotten to free `over` bytes."""
    freed = 0
    for upload in kept:
        freed += upload.bytes
        if freed >= over:
            return upload.expires_at
    return None


@dataclass(frozen=True)
class Usage:
    """What the kept uploads count: one person's (`mine`) and everyone's, the first to be forgotten first."""

    mine: list[Kept]
    everyone: list[Kept]

    @property
    def mine_bytes(self) -> int:
        return sum(upload.bytes for upload in self.mine)

    @property
    def total_bytes(self) -> int:
        return sum(upload.bytes for upload in self.everyone)

    def refusal(self, need: int) -> str:
        """Why an upload counting `need` bytes cannot be kept now, in words; "" when it fits."""
        size = filesizeformat
        if need > min(USER_QUOTA_BYTES, TOTAL_QUOTA_BYTES):
            return (f"This file takes {size(need)} once read, more than the "
                    f"{size(min(USER_QUOTA_BYTES, TOTAL_QUOTA_BYTES))} uploads may keep; split it or use the enroll "
                    "command.")
        discard = "discard the uploads listed below that you will not enroll"
        if self.mine_bytes + need > USER_QUOTA_BYTES:
            room = _room_at(self.mine, self.mine_bytes + need - USER_QUOTA_BYTES)
            return (f"Uploads waiting to be enrolled may keep {size(USER_QUOTA_BYTES)} per person; yours keep "
                    f"{size(self.mine_bytes)} in {len(self.mine)} upload{'s' if len(self.mine) != 1 else ''} and "
                    f"this file needs {size(need)}. There is room for it by {room:%Y-%m-%d %H:%M} UTC, when "
                    f"your older uploads are forgotten (each is kept {hours_words(UPLOAD_TTL)}), or at once if you "
                    f"{discard}.")
        if self.total_bytes + need > TOTAL_QUOTA_BYTES:
            room = _room_at(self.everyone, self.total_bytes + need - TOTAL_QUOTA_BYTES)
            return (f"Uploads waiting to be enrolled may keep {size(TOTAL_QUOTA_BYTES)} for everyone together; "
                    f"{size(self.total_bytes)} are in use and this file needs {size(need)}. There is room for it "
                    f"by {room:%Y-%m-%d %H:%M} UTC, when older uploads are forgotten, or sooner as uploads are "
                    f"enrolled or discarded{'; ' + discard if self.mine else ''}.")
        return ""


class QuotaFull(Exception):
    """An upload that does not fit its owner's quota or everyone's; the message says so in words."""


def uploads_usage(*, user_id: int) -> Usage:
    conn = redis_queue().connection
    everyone = _kept(conn, _now(conn))
    return Usage(mine=[upload for upload in everyone if upload.user == user_id], everyone=everyone)


def upload_keep(*, user_id: int, upload: Upload) -> str:
    """Keep the upload for UPLOAD_TTL under a new token, counted in the quota; QuotaFull when it does not fit.

    One Redis transaction under WATCH of KEPT: what was counted is what is written, so two uploads at once
    (any processes) cannot both take the last room; a lost race reads the set again."""
    data = json.dumps(asdict(upload), ensure_ascii=False).encode()
    token = secrets.token_hex(12)
    charged = max(len(data), MIN_CHARGE_BYTES)
    member = json.dumps({"token": token, "user": user_id, "sequence": upload.sequence_id, "file": upload.file,
                         "bytes": charged})

    def keep(pipe) -> None:
        now = _now(pipe)
        everyone = _kept(pipe, now)
        refusal = Usage(mine=[k for k in everyone if k.user == user_id], everyone=everyone).refusal(charged)
        if refusal:
            raise QuotaFull(refusal)
        pipe.multi()
        pipe.zremrangebyscore(KEPT, "-inf", now)  # the forgotten ones leave the count
        pipe.zadd(KEPT, {member: now + UPLOAD_TTL})
        pipe.expire(KEPT, UPLOAD_TTL)  # the set outlives none of its members
        pipe.set(upload_key(token), data, ex=UPLOAD_TTL)

    redis_queue().connection.transaction(keep, KEPT)
    return token


def _forget(uploads: list[Kept]) -> int:
    conn = redis_queue().connection
    with conn.pipeline() as pipe:
        for upload in uploads:
            pipe.zrem(KEPT, upload.member)
            pipe.delete(upload_key(upload.token))
        pipe.execute()
    return len(uploads)


def upload_discard(*, user_id: int, token: str = "") -> int:
    """Forget one of the person's kept uploads (all of theirs when `token` is empty); how many were forgotten."""
    mine = uploads_usage(user_id=user_id).mine
    return _forget([upload for upload in mine if upload.token == token or not token])


def upload_release(token: str) -> None:
    """After its run started: the rows travel with the job, the upload no longer needs keeping or counting."""
    conn = redis_queue().connection
    _forget([upload for upload in _kept(conn, _now(conn)) if upload.token == token])
