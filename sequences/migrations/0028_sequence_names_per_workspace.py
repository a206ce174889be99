"""A sequence's name is unique in its workspace, no longer across the install: two clients may each have
"Onboarding". Every existing name was unique across the install, so each stays unique in its workspace."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('mailboxes', '0028_mailbox_workspace'),
        ('sequences', '0027_erased_address_per_workspace'),
        ('workspaces', '0002_client_role'),
    ]

    operations = [
        migrations.AddConstraint(
            model_name='sequence',
            constraint=models.UniqueConstraint(fields=('workspace', 'name'), name='sequence_workspace_name_uniq'),
        ),
        migrations.AlterField(
            model_name='sequence',
            name='name',
            field=models.CharField(max_length=200),
        ),
    ]
