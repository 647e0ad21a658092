# Type checkers read records as the dataclasses they behave as (records.py says why they are not).
from dataclasses import asdict as as_dict, dataclass as record, field as field, replace as replace

class FrozenRecordError(AttributeError): ...
