"""The hashed ledger of erased people has a part per workspace and the agency's (no workspace); every address
erased before stays erased everywhere."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sequences', '0026_dashboard_counts_per_workspace'),
        ('workspaces', '0002_client_role'),
    ]

    operations = [
        migrations.AddField(
            model_name='erasedaddress',
            name='workspace',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='workspaces.workspace'),
        ),
        migrations.AlterField(
            model_name='erasedaddress',
            name='digest',
            field=models.CharField(db_index=True, max_length=64),
        ),
        migrations.AddConstraint(
            model_name='erasedaddress',
            constraint=models.UniqueConstraint(fields=('workspace', 'digest'), name='erasedaddress_once'),
        ),
        migrations.AddConstraint(
            model_name='erasedaddress',
            constraint=models.UniqueConstraint(condition=models.Q(('workspace__isnull', True)), fields=('digest',), name='erasedaddress_once_everywhere'),
        ),
    ]
