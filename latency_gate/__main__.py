from latency_gate.cli import main

main()
