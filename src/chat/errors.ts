// Errors of the chat layer: templates that do not parse or refuse a conversation, models without
// a template.
import { KilnError } from '../errors.js';

/** The chat template itself is broken (it does not parse, or is too large). */
export class ChatTemplateSyntaxError extends KilnError {
  readonly code = 'invalid_chat_template';
  constructor(message: string, cause?: unknown) {
    super(`${message}. Pass a working template with Runtime.load({ chatTemplate }).`, cause === undefined ? undefined : { cause });
  }
}

/**
 * The template refused this conversation: its own `raise_exception` (roles must alternate, one
 * tool call per message, ...) or an error on the conversation's shape.
 */
export class ChatTemplateError extends KilnError {
  readonly code = 'chat_template_error';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  constructor(readonly templateMessage: string, readonly raisedByTemplate: boolean, cause?: unknown) {
    super(
      raisedByTemplate
        ? `The model's chat template rejected the conversation: ${templateMessage}`
        : `The model's chat template failed on this conversation: ${templateMessage}. Check the message roles and fields.`,
      cause === undefined ? undefined : { cause },
    );
  }
}

export class NoChatTemplateError extends KilnError {
  readonly code = 'no_chat_template';
  constructor() {
    super('This model has no chat template (tokenizer.chat_template is missing). Pass one with Runtime.load({ chatTemplate }).');
  }
}
