"""asyncio I/O against GPU hosts: SSH connections, targets, runs, log tails, GPU samplers. No Textual."""
