"""What integration tests share that is not a test: scripts run in a process of their own
(chDB allows one session per process) and the study they store."""
