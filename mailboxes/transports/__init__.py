"""Transports at the network edge: base (outcomes, Submission, capability flags), smtp, esp.

mailboxes.selectors.transport_for picks one for a mailbox.
"""
