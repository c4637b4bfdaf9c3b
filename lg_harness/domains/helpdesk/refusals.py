"""What the service desk's tool errors and refusals tell an employee, in English and Chinese.

A tool error's message is written for the model (it names the tool to offer next); the ``phrase`` it
raises with names one of these, which the harness shows the person who would otherwise read the message
(``nodes.customer_text``). Values are filled from the error (``ToolError(..., phrase=key, **values)``).
"""

from __future__ import annotations

REFUSALS: dict[str, dict[str, str]] = {
    "error_employee_not_found": {
        "en": "Employee {employee_id} does not exist. Please check the id (an E and four digits).",
        "zh": "员工 {employee_id} 不存在，请核对员工号（E 加四位数字）。",
    },
    "error_employees_only": {
        "en": "Only employees can do this for themselves; service-desk agents use the ITSM console.",
        "zh": "这项操作只能由员工本人办理；服务台人员请使用 ITSM 控制台。",
    },
    "error_tickets_not_found": {
        "en": "Ticket {id} was not found among yours. Please check the number (INC and seven digits).",
        "zh": "在您的工单中没有找到 {id}，请核对工单号（INC 加七位数字）。",
    },
    "error_assets_not_found": {
        "en": "Asset {id} was not found among yours. Please check the tag (LT-, MN- or PH- and five digits).",
        "zh": "在您名下的设备中没有找到 {id}，请核对资产标签（LT-、MN- 或 PH- 加五位数字）。",
    },
    "error_access_requests_not_found": {
        "en": "Access request {id} was not found among yours. Please check the id (REQ and seven digits).",
        "zh": "在您的权限申请中没有找到 {id}，请核对申请编号（REQ 加七位数字）。",
    },
    "error_verify_first": {
        "en": "I need to verify your identity first: please give your employee id and six-digit PIN. Nothing was "
              "changed.",
        "zh": "需要先验证您的身份：请提供员工号和六位 PIN 码。目前没有做任何更改。",
    },
    "error_article_not_found": {
        "en": "Article {article_id} does not exist. Tell me what you need and I will search the knowledge base.",
        "zh": "文章 {article_id} 不存在。告诉我您需要什么，我帮您搜索知识库。",
    },
    "error_ticket_closed": {
        "en": "Ticket {ticket_id} is closed and cannot take comments; I can open a new ticket instead.",
        "zh": "工单 {ticket_id} 已关闭，无法再补充内容；我可以为您新建一个工单。",
    },
    "error_verify_no_conversation": {
        "en": "Your identity can only be verified in a conversation with me.",
        "zh": "身份验证只能在与我的会话中进行。",
    },
    "error_verify_own_only": {
        "en": "You can only verify your own identity; please give your own employee id.",
        "zh": "只能验证您本人的身份，请提供您自己的员工号。",
    },
    "error_pin_locked_out": {
        "en": "Too many wrong PINs in this conversation. I can get you a technician instead.",
        "zh": "本次会话中 PIN 码错误次数过多。我可以为您转接技术员。",
    },
    "error_pin_wrong": {
        "en": "The PIN does not match employee {employee_id}; {left} attempt(s) left. Nothing was changed.",
        "zh": "PIN 码与员工 {employee_id} 不符，还剩 {left} 次机会。目前没有做任何更改。",
    },
    "error_reset_own_only": {
        "en": "You can only reset your own password; a service-desk agent can reset others'.",
        "zh": "您只能重置自己的密码；他人的密码需由服务台人员重置。",
    },
    "error_access_exists": {
        "en": "There is already an access request {request_id} for {system} with status {status}; no new request "
              "is needed.",
        "zh": "{system} 已有权限申请 {request_id}（状态：{status_zh}），无需重新申请。",
    },
    "error_unlock_agents_only": {
        "en": "Only service-desk agents can unlock accounts. I can get you a technician instead.",
        "zh": "只有服务台人员可以解锁账户。我可以为您转接技术员。",
    },
    "error_not_locked": {
        "en": "The account of {employee_id} is not locked; there is nothing to unlock.",
        "zh": "{employee_id} 的账户没有被锁定，无需解锁。",
    },
}
