#!/usr/bin/env python3
# A stand-in for `nvidia-smi mig` in tests (no GPU here): keeps GPU instances in $FAKE_NVIDIA_SMI_DIR/mig.json
# and prints what the real tool prints for these calls: "Successfully created GPU instance ID N ..." for
# -cgi PROFILE:START -C, the -lgi table (rows "MIG 1g.10gb 19 9 2:1": name, profile id, instance id,
# start:size), and -gi N -dci / -dgi. A placement start listed in $FAKE_NVIDIA_SMI_DIR/fail-starts fails.
# Also the activity queries of idle reclaim, in the CSV the real tool prints (tests/data/nvidia-smi/):
# --query-gpu=pci.bus_id,utilization.gpu,memory.used and --query-compute-apps=gpu_bus_id,pid,process_name,
# used_memory with --format=csv,noheader,nounits, from $FAKE_NVIDIA_SMI_DIR/activity.json:
# {"0000:12:00.0": {"utilization": 97, "memory": 30000, "processes": [[4100, "python3", 30000]]}, ...};
# a utilization of null prints "[N/A]"; a file "activity-fails" makes both queries fail.
# MIG mode: a GPU with instances in mig.json reads "[N/A]" whatever activity.json says, and what runs in each
# instance is "instance_processes": {"<start>": [[pid, name, memory]]}. With no arguments it prints the plain
# table in the layout of tests/data/nvidia-smi/ (GPU rows with their bus id, Processes rows with GPU instance
# ids), which is how the agent tells which instance a process runs in.
import fcntl, json, os, sys
here = os.environ["FAKE_NVIDIA_SMI_DIR"]

def load(name, default):
    path = os.path.join(here, name)
    return json.load(open(path)) if os.path.exists(path) else default

def instances_on(mig, address):
    return [i for i in mig["instances"] if i["pci"].lower() in (address.lower(), "0000" + address.lower())]

if len(sys.argv) == 1:  # the plain table
    gpus = load("activity.json", {})
    mig = load("mig.json", {"next": 1, "instances": []})
    print("+-----------------------------------------------------------------------------------------+")
    for index, (address, g) in enumerate(sorted(gpus.items())):
        mode = "Enabled" if instances_on(mig, address) else "Disabled"
        print(f"|  {index:2d}  NVIDIA H100 80GB HBM3          On  |   0000{address.upper()} Off |                    0 |")
        print(f"| N/A   40C    P0             72W /  700W |   {g.get('memory', 0):5d}MiB /  81559MiB |      N/A     Default |")
        print(f"|                                         |                        |             {mode:>8} |")
        print("+-----------------------------------------+------------------------+----------------------+")
    print("")
    print("+-----------------------------------------------------------------------------------------+")
    print("| Processes:                                                                              |")
    print("|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |")
    print("|        ID   ID                                                               Usage      |")
    print("|=========================================================================================|")
    for index, (address, g) in enumerate(sorted(gpus.items())):
        for pid, name, memory in g.get("processes", []):
            print(f"|  {index:3d}   N/A  N/A      {pid:11d}      C   {name:<32} {memory:8d}MiB |")
        gi_of = {i["start"]: i["gi"] for i in instances_on(mig, address)}
        for start, processes in sorted(g.get("instance_processes", {}).items()):
            for pid, name, memory in processes:
                print(f"|  {index:3d}  {gi_of.get(int(start), 99):3d}    0      {pid:11d}      C   {name:<32} {memory:8d}MiB |")
    print("+-----------------------------------------------------------------------------------------+")
    sys.exit(0)
query = next((a for a in sys.argv[1:] if a.startswith("--query-")), None)
if query is not None:
    if os.path.exists(os.path.join(here, "activity-fails")):
        print("Unable to determine the device handle for GPU0000:12:00.0: Unknown Error", file=sys.stderr)
        sys.exit(255)
    gpus = load("activity.json", {})
    mig = load("mig.json", {"next": 1, "instances": []})
    bus = lambda address: "0000" + address.upper()  # nvidia-smi's 8-digit domain
    for address, g in sorted(gpus.items()):
        if query == "--query-gpu=pci.bus_id,utilization.gpu,memory.used":
            util = "[N/A]" if g.get("utilization") is None or instances_on(mig, address) else g["utilization"]
            print(f"{bus(address)}, {util}, {g.get('memory', 0)}")
        elif query == "--query-compute-apps=gpu_bus_id,pid,process_name,used_memory":
            in_instances = [p for ps in g.get("instance_processes", {}).values() for p in ps]
            for pid, name, memory in g.get("processes", []) + in_instances:
                print(f"{bus(address)}, {pid}, {name}, {memory}")
        else:
            print(f"Field in {query} is not a valid field to query.", file=sys.stderr)
            sys.exit(2)
    sys.exit(0)
state_file = os.path.join(here, "mig.json")
# One call at a time, as the real driver serialises MIG changes: the agent may run several at once (a read that
# met a half-written file once failed a decompose under ASan), so the state is read and written under a lock.
lock = open(os.path.join(here, "mig.lock"), "w")
fcntl.flock(lock, fcntl.LOCK_EX)
state = json.load(open(state_file)) if os.path.exists(state_file) else {"next": 1, "instances": []}
args = sys.argv[1:]
assert args[0] == "mig"
pci = args[args.index("-i") + 1]
if "-cgi" in args:
    name, start = args[args.index("-cgi") + 1].split(":")
    fails = open(os.path.join(here, "fail-starts")).read().split() if os.path.exists(os.path.join(here, "fail-starts")) else []
    if start in fails:
        print(f"Unable to create a GPU instance on GPU {pci} using profile {name}: Insufficient Resources", file=sys.stderr)
        sys.exit(1)
    gi = state["next"]; state["next"] += 1
    state["instances"].append({"pci": pci, "name": name, "start": int(start), "gi": gi})
    print(f"Successfully created GPU instance ID {gi:2d} on GPU  0 using profile MIG {name} (ID 19)")
    print(f"Successfully created compute instance ID  0 on GPU  0 GPU instance ID {gi:2d} using profile MIG {name} (ID  0)")
elif "-lgi" in args:
    print("+-------------------------------------------------------+")
    print("| GPU instances:                                        |")
    print("| GPU   Name             Profile  Instance   Placement  |")
    print("|                          ID       ID       Start:Size |")
    print("|=======================================================|")
    for i in state["instances"]:
        if i["pci"] == pci:
            print(f"|   0  MIG {i['name']:<12}   19       {i['gi']:>2}          {i['start']}:1     |")
    print("+-------------------------------------------------------+")
elif "-dgi" in args:
    gi = int(args[args.index("-gi") + 1])
    state["instances"] = [i for i in state["instances"] if not (i["pci"] == pci and i["gi"] == gi)]
    print(f"Successfully destroyed GPU instance ID {gi:2d} from GPU  0")
with open(state_file + ".tmp", "w") as out:
    json.dump(state, out)
os.replace(state_file + ".tmp", state_file)
