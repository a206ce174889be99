"""The inbound side: reading replies and reports (IMAP polls and the IDLE watcher), classifying them,
correlating them to what we sent, and acting on them through the domain's services; the ESP tracking webhooks."""
