"""When the IMAP server began refusing a mailbox's credentials, and its words (sequences.services.imap_login)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('mailboxes', '0024_secret_endpoints'),
    ]

    operations = [
        migrations.AddField(
            model_name='mailbox',
            name='imap_login_refused_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='mailbox',
            name='imap_login_refused_error',
            field=models.TextField(blank=True),
        ),
    ]
