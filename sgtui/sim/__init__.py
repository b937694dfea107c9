"""A simulated GPU host: an SSH server on 127.0.0.1 with fake nvidia-smi, pct and an SGLang stand-in.

host.py       SimHost: the SSH server, the state dir, scenarios; kills its servers on close
scenarios.py  the named situations (2x A6000 on Proxmox, RTX PRO 6000, port in use, ...)
install.py    lays out the state dir: fake binaries, containers, SGLang venvs
state.py      GPUs and who holds their memory, one JSON file under fcntl locks
nvidia_smi.py the fake nvidia-smi (query formats, -lms loops, the table)
pct.py        the fake pct (list, config, exec with the container's own /opt)
standin.py    `python -m sglang.launch_server` inside the sim: reads the flags, starts up, serves HTTP
standin_startup.py  the startup phases as the fit engine says SGLang goes (memory rising, log lines, errors)
standin_launch.py   the launch's rank processes, fake GPU memory, pacing and endings (crash, SIGTERM)
plan.py       what the stand-in will print and allocate, from the fit report
logfmt.py     SGLang's log wording per version
http_api.py   /health, /get_model_info and friends of a ready server
"""
