"""The gateway's HTTP routes (tier T3), one module per resource: ``turns`` (the three wires'
turn endpoints), ``native`` (fak's own adjudicate/admit/witness/events routes), ``ops``
(health, metrics) and ``recall`` (session core images). Each module holds module-level
endpoints and one ``ROUTES`` table; endpoints read the shared ``GatewayState`` from
``request.app.state`` (``inputs.gateway``) and ``fak.gateway.app.build_app`` concatenates the
tables. Routes translate and call the kernel; they carry no screening of their own."""
