"""The colleague-reply matches and the data-protection requests belong to the `inbound` app now
(`inbound/0005_ledger_moved_here`): they leave this app's state only; their tables stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("sequences", "0019_unsubscribe_style"),
        ("inbound", "0005_ledger_moved_here"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ReplyMatch"),
                migrations.DeleteModel(name="DataRequest"),
            ],
            database_operations=[],
        ),
    ]
