"""The scenarios, in the order a run takes them; each is a function of the same name."""

from .steady import steady
from .ingest import ingest, sqlintake
from .hotspot import hotspot, intake
from .scale import scale
from .scaleout import scaleout, queuetype
from .longrun import longrun
from .prune import prune
from .faults import chaos
from .peers import peers
from .sweep import sweep

BY_NAME = {"steady": steady, "ingest": ingest, "sqlintake": sqlintake, "hotspot": hotspot, "peers": peers, "sweep": sweep,
           "intake": intake, "scale": scale, "scaleout": scaleout, "queuetype": queuetype,
           "longrun": longrun, "prune": prune, "chaos": chaos}
