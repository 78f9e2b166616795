"""Model-facing tools: schemas, argument validation, escalation texts, result text."""
