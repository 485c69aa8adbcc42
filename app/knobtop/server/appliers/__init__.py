"""The knob appliers, one shape: ``plan(changes) -> Plan`` (every check, once), then
``apply(plan) -> Outcome``.  ``set_global`` (dynamic knobs), ``dropin_restart`` (static
knobs: knobtop's drop-in file and a restart of the server nodes) and ``ndb_rolling`` (NDB's
DiskPageBufferMemory: config.ini and a rolling restart of the data nodes)."""
