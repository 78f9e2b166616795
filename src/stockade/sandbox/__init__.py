"""The ProviderActor's room: pure profile builders, the platform chain, the actor."""
