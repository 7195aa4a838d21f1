"""The gateway's HTTP routes (tier T3), one module per resource: ``turns`` (the three wires'
turn endpoints), ``native`` (fak's own adjudicate/admit/witness/events routes), ``ops``
(health, metrics) and ``recall`` (session core images). Routes translate and call the kernel;
they carry no screening of their own."""
