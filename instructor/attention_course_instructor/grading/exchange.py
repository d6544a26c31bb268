"""nbgrader's exchange, with one hole closed: a submission is collected only from its own author.

nbgrader's shared ``inbound`` folder (mode 2733) lets any student drop a folder named
``<someone else>+<assignment>+<later timestamp>+...`` into it. Stock ``nbgrader collect`` notices
that the folder's owner is not the student it names, logs a warning, and collects it anyway, as that
student's newest submission. :class:`OwnerCheckedCollect` takes each student's newest submission
*that their own account wrote* and refuses the forged ones with an error naming the owner.
The course's ``nbgrader_config.py`` selects it (``ExchangeFactory.collect``).
"""
from __future__ import annotations

import os
import pwd

from nbgrader.exchange.default.collect import ExchangeCollect


class OwnerCheckedCollect(ExchangeCollect):

    def _owner(self, record) -> str:
        uid = os.stat(os.path.join(self.inbound_path, record["filename"])).st_uid
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return f"uid {uid}"

    def _genuine(self, record) -> bool:
        return self._owner(record) == record["username"]

    def _refuse(self, records) -> list:
        """The genuine records; each forged one is reported once."""
        if not hasattr(self, "_reported"):
            self._reported = set()
        reported = self._reported
        for record in records:
            if not self._genuine(record) and record["filename"] not in reported:
                reported.add(record["filename"])
                self.log.error("not collected: %s names %s but was written by %s",
                               record["filename"], record["username"], self._owner(record))
        return [r for r in records if self._genuine(r)]

    def _sort_by_timestamp(self, records):
        # called once per student: their own submissions only, unless every one is forged
        return super()._sort_by_timestamp(self._refuse(records) or records)

    def copy_files(self):
        self.src_records = self._refuse(self.src_records)
        super().copy_files()
