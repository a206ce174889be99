"""A sequence's booking page (`booking_url`: `{{ booking_link }}` links to it with the person's token), and the stop
reason of a booking made there (`meeting_booked`, written by the meetings app's webhook receivers)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sequences", "0020_replies_ledger_moved_to_inbound"),
    ]

    operations = [
        migrations.AddField(
            model_name="sequence",
            name="booking_url",
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.AlterField(
            model_name="enrollment",
            name="stop_reason",
            field=models.CharField(blank=True, choices=[("replied", "Replied"), ("colleague_replied", "Someone at the company replied"), ("unsubscribed", "Unsubscribed"), ("complained", "Complained"), ("hard_bounce", "Hard bounce"), ("suppressed", "Suppressed"), ("operator", "Stopped by operator"), ("failed", "A step failed"), ("meeting_booked", "Booked a meeting")], max_length=20),
        ),
    ]
