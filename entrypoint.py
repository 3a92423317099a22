"""The action container's entry point: GitHub's runner executes this with the step's inputs."""

from latency_gate.action import main

raise SystemExit(main())
