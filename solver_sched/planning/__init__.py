"""Assignment -> Plan (concrete nodes, minimal evictions, reasons) and the independent checker."""
