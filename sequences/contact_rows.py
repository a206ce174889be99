"""One contact row of an import checked completely before anything is written: the rules the `enroll` command,
the browser's upload and the API share."""

from __future__ import annotations

import re
import unicodedata

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from .models import Contact
from .selectors import normalize_email
from .services.enrollments import ContactRow
from .window import zone_problem


class FileRefused(ValueError):
    """A file that cannot be read as a CSV of contacts, with the reason in words (its line and byte)."""


NAMED = ("email", "first_name", "last_name", "company", "timezone")
NAME_FIELDS = ("first_name", "last_name", "company")
MAX_LENGTH = {name: Contact._meta.get_field(name).max_length for name in (*NAME_FIELDS, "timezone")}
EMAIL_MAX = 254  # RFC 5321 path limit, less the angle brackets
# A contact's own template fields: enough for any mail merge, small enough that a row cannot carry a file.
MAX_FIELDS = 100
MAX_FIELD_NAME = 64
MAX_FIELD_VALUE = 10_000
SURROGATE = re.compile(r"[\ud800-\udfff]")  # JSON's "\ud800" decodes to one; no database stores it


# Column names that mean a contact field, in the spellings spreadsheets and CRMs export (English, German,
# French, Spanish), compared by their letters and digits only: "E-mail", "Email Address", "First Name",
# "Prénom", "Company Name" and "Time zone" all find their field. "Name" alone is left as a custom field.
COLUMN_ALIASES = {
    "email": ("email", "emailaddress", "mail", "mailaddress", "emailadresse", "mailadresse", "courriel",
              "adresseemail", "adressemail", "correo", "correoelectronico", "workemail", "businessemail"),
    "first_name": ("firstname", "first", "givenname", "forename", "vorname", "prenom", "nombre"),
    "last_name": ("lastname", "last", "surname", "familyname", "nachname", "familienname", "nom", "nomdefamille",
                  "apellido", "apellidos"),
    "company": ("company", "companyname", "organisation", "organization", "organisationname", "organizationname",
                "org", "firma", "firmenname", "unternehmen", "entreprise", "societe", "empresa", "employer",
                "account", "accountname"),
    "timezone": ("timezone", "tz", "zeitzone", "fuseauhoraire", "zonahoraria"),
}
_ALIAS = {alias: field for field, aliases in COLUMN_ALIASES.items() for alias in aliases}


def column_field(name: str) -> str:
    """The contact field a column name means ("" for none): case, accents, spaces and punctuation ignored."""
    letters = unicodedata.normalize("NFKD", name.casefold())
    return _ALIAS.get("".join(c for c in letters if c.isalnum() and c.isascii()), "")


def decode(data: bytes, file: str) -> str:
    """UTF-8 text (a BOM is dropped); a clear error naming the line and byte otherwise."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileRefused(f"{file}: line {line}, byte {column} (offset {exc.start}): 0x{data[exc.start]:02x} is "
                           "not UTF-8; save the file as UTF-8") from None


def header_columns(header: list[str], file: str) -> list[str]:
    """Normalized column names; two that differ only in case or spaces are ambiguous, so an error."""
    names = [h.strip().lower() for h in header]
    seen: dict[str, str] = {}
    for raw, name in zip(header, names, strict=True):
        if name and name in seen:
            raise FileRefused(f"{file}: columns {seen[name]!r} and {raw!r} are the same column "
                               "(names are compared without case and spaces); keep one")
        seen[name] = raw
    if "email" not in seen:
        raise FileRefused(f"{file}: the header row must have an `email` column")
    return names


def row_check(line: int, cells: dict[str, str], extra: bool) -> tuple[ContactRow | None, str]:
    """The row as the service takes it, or the reason it is rejected: everything that could fail a write."""
    if extra:
        return None, "more cells than the header has columns"
    raw_email = cells.get("email", "")
    email = normalize_email(raw_email)
    try:
        validate_email(email)
    except ValidationError:
        return None, f"{raw_email!r} is not a valid address"
    if len(email) > EMAIL_MAX:
        return None, f"the address is longer than {EMAIL_MAX} characters"
    for name, value in cells.items():
        shown = name if len(name) <= MAX_FIELD_NAME else name[:MAX_FIELD_NAME] + "…"
        if "\0" in name or "\0" in value:
            return None, f"{shown!r}: contains a NUL character"
        if SURROGATE.search(name) or SURROGATE.search(value):
            return None, f"{shown!r}: contains a lone surrogate (not a character)"
    fields = {k: v for k, v in cells.items() if k not in NAMED and k}
    if len(fields) > MAX_FIELDS:
        return None, f"{len(fields)} template fields, at most {MAX_FIELDS}"
    for name, value in fields.items():
        if len(name) > MAX_FIELD_NAME:
            return None, f"a field name of {len(name)} characters, at most {MAX_FIELD_NAME}"
        if len(value) > MAX_FIELD_VALUE:
            return None, f"{name}: {len(value)} characters, at most {MAX_FIELD_VALUE}"
    for name in NAME_FIELDS:
        value = cells.get(name, "")
        if len(value) > MAX_LENGTH[name]:
            return None, f"{name}: {len(value)} characters, at most {MAX_LENGTH[name]}"
        if "\r" in value or "\n" in value:
            return None, f"{name}: contains a line break"
    zone = cells.get("timezone", "")
    if zone:
        if len(zone) > MAX_LENGTH["timezone"]:
            return None, f"timezone: longer than {MAX_LENGTH['timezone']} characters"
        if zone_problem(zone):
            return None, f"timezone: {zone_problem(zone)}"
    return ContactRow(line=line, email=email, first_name=cells.get("first_name", ""),
                               last_name=cells.get("last_name", ""), company=cells.get("company", ""),
                               timezone_name=zone, fields=fields), ""
