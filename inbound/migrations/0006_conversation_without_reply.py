"""A conversation may hold no reply: a person who booked a meeting through a step's booking link without writing
back gets one (meetings), its `latest` reply empty."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("inbound", "0005_ledger_moved_here"),
    ]

    operations = [
        migrations.AlterField(
            model_name="conversation",
            name="latest",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to="inbound.inboundmessage"),
        ),
    ]
