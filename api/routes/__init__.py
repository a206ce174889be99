"""One ninja router per resource; thin: parse, call one service, present."""
