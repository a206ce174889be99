"""The permissions the operator UI and the JSON API check: one role model for both.

The groups that hold them: sequences/migrations/0002_roles.py.
"""

VIEW = "sequences.view_sequence"
VIEW_ENROLLMENT = "sequences.view_enrollment"
VIEW_INCIDENT = "sequences.view_timelineevent"
VIEW_INBOUND = "inbound.view_inboundmessage"
VIEW_MAILBOX = "mailboxes.view_mailbox"
VIEW_LEDGER = "sequences.view_suppression"
VIEW_LOG = "sequences.view_operatoraction"
OPERATE = "sequences.operate"
MANAGE_SUPPRESSIONS = "sequences.manage_suppressions"
# Naming a mailbox's password variables and OAuth endpoints: what decides where a secret of the install may go.
MANAGE_MAILBOX_SECRETS = "mailboxes.change_mailbox"

PERM_TEXT = {
    OPERATE: "Pausing, resuming and stopping need the operators or admins role.",
    MANAGE_SUPPRESSIONS: "Adding, lifting, importing and exporting suppressions needs the admins role.",
}
