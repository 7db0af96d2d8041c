// Python's datetime.strftime for the directives chat templates use (`strftime_now("%d %b %Y")`),
// in local time and the C locale, as transformers' `strftime_now` renders them.

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

export function strftime(date: Date, format: string): string {
  return format.replace(/%([aAbBdeHIjmMpSyYZ%])/g, (_, d: string) => {
    switch (d) {
      case 'a': return DAYS[date.getDay()]!.slice(0, 3);
      case 'A': return DAYS[date.getDay()]!;
      case 'b': return MONTHS[date.getMonth()]!.slice(0, 3);
      case 'B': return MONTHS[date.getMonth()]!;
      case 'd': return pad(date.getDate());
      case 'e': return String(date.getDate()).padStart(2, ' ');
      case 'H': return pad(date.getHours());
      case 'I': return pad(date.getHours() % 12 || 12);
      case 'j': return pad(dayOfYear(date), 3);
      case 'm': return pad(date.getMonth() + 1);
      case 'M': return pad(date.getMinutes());
      case 'p': return date.getHours() < 12 ? 'AM' : 'PM';
      case 'S': return pad(date.getSeconds());
      case 'y': return pad(date.getFullYear() % 100);
      case 'Y': return String(date.getFullYear());
      case 'Z': return ''; // a naive datetime has no zone name
      default: return '%';
    }
  });
}

function dayOfYear(date: Date): number {
  const start = new Date(date.getFullYear(), 0, 1);
  return Math.round((new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime() - start.getTime()) / 86_400_000) + 1;
}
