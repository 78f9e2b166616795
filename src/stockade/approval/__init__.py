"""The ApprovalActor's room: decisions, the answerer chain, built-in answerers, audit events."""
