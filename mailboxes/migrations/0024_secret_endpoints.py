"""Each stored or named secret of a mailbox is bound to the endpoint the mailbox names now (mailboxes.bound)."""

from django.db import migrations, models


def bind_current(apps, schema_editor):
    from mailboxes import bound

    Mailbox = apps.get_model("mailboxes", "Mailbox")
    for mailbox in Mailbox.objects.all().iterator():
        for which in bound.SECRETS:
            bound.bind(mailbox, which)
        Mailbox.objects.filter(pk=mailbox.pk).update(secret_endpoints=mailbox.secret_endpoints)


class Migration(migrations.Migration):

    dependencies = [
        ('mailboxes', '0023_mailbox_plural'),
    ]

    operations = [
        migrations.AddField(
            model_name='mailbox',
            name='secret_endpoints',
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
        migrations.RunPython(bind_current, migrations.RunPython.noop),
    ]
