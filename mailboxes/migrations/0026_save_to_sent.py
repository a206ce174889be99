"""Copy each message sent to the IMAP Sent folder (save_to_sent, "auto" by default), and the last copy that failed
(sequences.sent_copies)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('mailboxes', '0025_imap_login_refused'),
    ]

    operations = [
        migrations.AddField(
            model_name='mailbox',
            name='save_to_sent',
            field=models.CharField(choices=[('auto', 'automatic: unless the server keeps a copy itself'), ('always', 'always'), ('never', 'never')], default='auto', help_text='copy each message sent to the IMAP Sent folder', max_length=10),
        ),
        migrations.AddField(
            model_name='mailbox',
            name='sent_copy_error',
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name='mailbox',
            name='sent_copy_failed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
