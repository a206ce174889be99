"""The inbound ledger and the watchers' leases and processes belong to the `inbound` app now
(`inbound/0005_ledger_moved_here`): they leave this app's state only; their tables stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("mailboxes", "0026_save_to_sent"),
        ("inbound", "0005_ledger_moved_here"),
        ("sequences", "0020_replies_ledger_moved_to_inbound"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="InboundMessage"),
                migrations.DeleteModel(name="WatchLease"),
                migrations.DeleteModel(name="WatcherProcess"),
            ],
            database_operations=[],
        ),
    ]
