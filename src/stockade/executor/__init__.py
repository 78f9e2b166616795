"""The ExecutorActor's room: pure classification and buffers, spawn/drain/kill, jobs."""
