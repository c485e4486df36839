export { CodedError, codeOf } from './coded-error';
