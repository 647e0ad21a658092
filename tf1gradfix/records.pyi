# Type checkers read records as the dataclasses they behave as (records.py says why they are not).
from dataclasses import asdict as as_dict, field as field, replace as replace
from dataclasses import dataclass

record = dataclass

class FrozenRecordError(AttributeError): ...
