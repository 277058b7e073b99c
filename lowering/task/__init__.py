"""Task-level passes (schedule, events, memory plan) and the task-graph analysis they share."""
